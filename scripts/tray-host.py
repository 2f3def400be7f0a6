#!/usr/bin/python3
"""A minimal system-tray host for testing the desktop app's tray menu under Xvfb (scripts/test-desktop.sh).

Desktop trays on Linux speak StatusNotifierItem over D-Bus: the app's tray icon (libayatana-appindicator,
through Tauri's tray-icon) registers with `org.kde.StatusNotifierWatcher` and exports its menu with the
`com.canonical.dbusmenu` interface. This program is that watcher, on the session bus in
DBUS_SESSION_BUS_ADDRESS, and drives the menu the way a panel does when the user clicks an item.

It prints one JSON object per line on stdout and reads commands, one per line, on stdin:
  {"registered": ":1.5", "path": "/org/ayatana/NotificationItem/tomo"}     when the app's icon registers
  menu          -> {"menu": [{"id": 3, "label": "Pet mode", "toggle": 0, "children": [...]}, ...]}
  labels        -> {"labels": ["Show / hide", "Pet mode", ...]}   (every item, submenus included, in order)
  toggle LABEL  -> {"toggle": 0 | 1 | null}   (the check state of the item with that label)
  click LABEL   -> {"clicked": "LABEL", "id": 3}   (a "clicked" event for the item with that label; a
                   submenu's items are found too) or {"error": "..."}
Uses python3-gi (Gio), so it runs with Debian's /usr/bin/python3.
"""
import json
import sys
import threading
import time

from gi.repository import Gio, GLib

WATCHER_XML = """
<node>
  <interface name="org.kde.StatusNotifierWatcher">
    <method name="RegisterStatusNotifierItem"><arg name="service" type="s" direction="in"/></method>
    <method name="RegisterStatusNotifierHost"><arg name="service" type="s" direction="in"/></method>
    <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
    <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
    <property name="ProtocolVersion" type="i" access="read"/>
    <signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
    <signal name="StatusNotifierHostRegistered"/>
  </interface>
</node>
"""

items = []  # (bus name, object path) of registered items, newest last
loop = GLib.MainLoop()
bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)


def say(obj):
    print(json.dumps(obj), flush=True)


def on_call(connection, sender, path, interface, method, params, invocation):
    if method == "RegisterStatusNotifierItem":
        (service,) = params.unpack()
        # Items register with their object path (ayatana) or a bus name (KDE); the sender is the owner.
        if service.startswith("/"):
            item = (sender, service)
        else:
            item = (service, "/StatusNotifierItem")
        items.append(item)
        say({"registered": item[0], "path": item[1]})
        connection.emit_signal(None, path, interface, "StatusNotifierItemRegistered",
                               GLib.Variant("(s)", (f"{item[0]}{item[1]}",)))
    invocation.return_value(None)


def on_get(connection, sender, path, interface, prop):
    if prop == "RegisteredStatusNotifierItems":
        return GLib.Variant("as", [f"{name}{p}" for name, p in items])
    if prop == "IsStatusNotifierHostRegistered":
        return GLib.Variant("b", True)
    if prop == "ProtocolVersion":
        return GLib.Variant("i", 0)
    return None


def call(name, path, interface, method, params, reply_type):
    return bus.call_sync(name, path, interface, method, params, GLib.VariantType(reply_type),
                         Gio.DBusCallFlags.NONE, 5000, None).unpack()


def menu_of(item):
    name, path = item
    (menu_path,) = call(name, path, "org.freedesktop.DBus.Properties", "Get",
                        GLib.Variant("(ss)", ("org.kde.StatusNotifierItem", "Menu")), "(v)")
    _revision, layout = call(name, menu_path, "com.canonical.dbusmenu", "GetLayout",
                             GLib.Variant("(iias)", (0, -1, [])), "(u(ia{sv}av))")

    def node(entry):
        ident, props, children = entry
        return {
            "id": ident,
            "label": props.get("label", "").replace("_", ""),
            "type": props.get("type", "standard"),
            "toggle": props.get("toggle-state"),
            "enabled": props.get("enabled", True),
            "children": [node(c) for c in children],
        }

    return menu_path, [node(c) for c in layout[2]]


def find(nodes, label, parent=0):
    """The item with that label and the id of the menu holding it (0: the root menu)."""
    for n in nodes:
        if n["label"] == label:
            return n, parent
        hit = find(n["children"], label, n["id"])
        if hit:
            return hit
    return None


def walk(nodes):
    for n in nodes:
        if n["label"]:
            yield n["label"]
        yield from walk(n["children"])


def handle(line):
    words = line.strip().split(" ", 1)
    if not words[0]:
        return
    if not items:
        say({"error": "no tray item has registered"})
        return
    try:
        menu_path, nodes = menu_of(items[-1])
        if words[0] == "menu":
            say({"menu": nodes})
        elif words[0] == "labels":
            say({"labels": list(walk(nodes))})
        elif words[0] == "toggle" and len(words) == 2:
            hit = find(nodes, words[1])
            if hit is None:
                say({"error": f"no menu item labelled {words[1]!r}"})
            else:
                say({"toggle": hit[0]["toggle"]})
        elif words[0] == "click" and len(words) == 2:
            hit = find(nodes, words[1])
            if hit is None:
                say({"error": f"no menu item labelled {words[1]!r}"})
                return
            target, parent = hit
            # What a panel does when the user clicks: it opens the menu holding the item (AboutToShow),
            # then sends "clicked" with the item's id.
            call(items[-1][0], menu_path, "com.canonical.dbusmenu", "AboutToShow",
                 GLib.Variant("(i)", (parent,)), "(b)")
            call(items[-1][0], menu_path, "com.canonical.dbusmenu", "Event",
                 GLib.Variant("(isvu)", (target["id"], "clicked", GLib.Variant("i", 0), int(time.time()))),
                 "()")
            say({"clicked": words[1], "id": target["id"]})
        else:
            say({"error": f"unknown command {line.strip()!r}"})
    except GLib.Error as error:
        say({"error": error.message})


def read_commands():
    for line in sys.stdin:
        GLib.idle_add(lambda l=line: handle(l) and False)
    GLib.idle_add(loop.quit)


def main():
    node = Gio.DBusNodeInfo.new_for_xml(WATCHER_XML)
    bus.register_object("/StatusNotifierWatcher", node.interfaces[0], on_call, on_get, None)
    owned = threading.Event()

    def acquired(*_):
        owned.set()
        say({"watcher": "ready"})

    def lost(*_):
        say({"error": "cannot own org.kde.StatusNotifierWatcher (another tray host runs)"})
        loop.quit()

    Gio.bus_own_name_on_connection(bus, "org.kde.StatusNotifierWatcher", Gio.BusNameOwnerFlags.NONE,
                                   acquired, lost)
    threading.Thread(target=read_commands, daemon=True).start()
    loop.run()


if __name__ == "__main__":
    main()
