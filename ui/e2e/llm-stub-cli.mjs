// The scripted LLM of llm-stub.mjs as a process, for tests outside Node (scripts/test-desktop.sh): prints
// `base_url <url>` once listening, then `user <json string>` with the last user message of every request it
// answers. Stops on SIGTERM or when stdin closes.
import { startLlmStub } from './llm-stub.mjs';

const stub = await startLlmStub({ delayMs: 20 });
console.log(`base_url ${stub.baseUrl}`);
let reported = 0;
const timer = setInterval(() => {
  for (; reported < stub.requests.length; reported++) {
    const messages = stub.requests[reported].messages ?? [];
    const user = messages.filter((m) => m.role === 'user').at(-1);
    const text = typeof user?.content === 'string' ? user.content : JSON.stringify(user?.content ?? null);
    console.log(`user ${JSON.stringify(text)}`);
  }
}, 50);
const stop = async () => {
  clearInterval(timer);
  await stub.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
