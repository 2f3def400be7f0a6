//! Numbers written with digits, read the way a Mandarin speaker says them: `123` → 一百二十三, `3.5` → 三点五,
//! `50%` → 百分之五十, `2024年` → 二零二四年, `10:30` → 十点三十分, `-3` → 负三, `1/2` → 二分之一,
//! `3-5` → 三到五, `2个` → 两个, and long digit strings (phone numbers, codes) digit by digit. Full-width digits
//! are read like ASCII ones (the caller folds them first).

const DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];
/// Units inside a group of four digits, from the thousands down.
const SMALL_UNITS: [&str; 4] = ["千", "百", "十", ""];
/// Units of successive groups of four digits.
const GROUP_UNITS: [&str; 4] = ["", "万", "亿", "万亿"];
/// Longer integers are read digit by digit (identifiers, not quantities).
const MAX_QUANTITY_DIGITS: usize = 16;

/// Measure words after which 2 is said 两: `2个` → 两个, `2点` → 两点.
const MEASURE_WORDS: &str = "个只本条张件位天次点块岁种杯口家头辆双台元斤周场节层";

/// Each digit read on its own: `2024` → 二零二四.
pub fn digit_by_digit(digits: &str) -> String {
    digits
        .chars()
        .filter_map(|c| c.to_digit(10).map(|d| DIGITS[d as usize]))
        .collect()
}

/// A non-negative integer in ASCII digits read as a quantity: `10` → 十, `105` → 一百零五, `2000` → 两千.
pub fn integer(digits: &str) -> String {
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return "零".to_owned();
    }
    if digits.len() > MAX_QUANTITY_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return digit_by_digit(digits);
    }
    let values: Vec<usize> = digits.bytes().map(|b| usize::from(b - b'0')).collect();
    let groups: Vec<&[usize]> = {
        let first = values.len() % 4;
        let mut out = Vec::new();
        if first > 0 {
            out.push(&values[..first]);
        }
        out.extend(values[first..].chunks(4));
        out
    };
    let mut out = String::new();
    let mut zero_pending = false;
    for (g, group) in groups.iter().enumerate() {
        let unit = GROUP_UNITS[groups.len() - 1 - g];
        let offset = 4 - group.len();
        let mut group_text = String::new();
        for (i, &d) in group.iter().enumerate() {
            if d == 0 {
                zero_pending = !out.is_empty() || !group_text.is_empty();
                continue;
            }
            if zero_pending {
                group_text.push('零');
                zero_pending = false;
            }
            group_text.push(DIGITS[d]);
            group_text.push_str(SMALL_UNITS[offset + i]);
        }
        if !group_text.is_empty() {
            out.push_str(&group_text);
            out.push_str(unit);
        }
    }
    // 一十五 is said 十五 at the start of a number, and a leading 2 before 千, 万 or 亿 is 两.
    if let Some(rest) = out.strip_prefix("一十") {
        out = format!("十{rest}");
    }
    for unit in ["千", "万", "亿"] {
        if let Some(rest) = out.strip_prefix(&format!("二{unit}")) {
            out = format!("两{unit}{rest}");
        }
    }
    out
}

/// `digits` (an integer part) and an optional fractional part: `3`,`14` → 三点一四.
fn decimal(integer_part: &str, fraction: Option<&str>) -> String {
    let mut out = integer(integer_part);
    if let Some(fraction) = fraction.filter(|f| !f.is_empty()) {
        out.push('点');
        out.push_str(&digit_by_digit(fraction));
    }
    out
}

/// A run of ASCII digits starting at byte `start` of `text`: (end, digits).
fn digit_run(text: &str, start: usize) -> (usize, &str) {
    let end = text[start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(text.len(), |i| start + i);
    (end, &text[start..end])
}

/// Replaces every number in `text` (ASCII digits) with its Mandarin reading; everything else is kept.
pub fn read_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut i = 0;
    while i < text.len() {
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        if !c.is_ascii_digit() {
            // A minus sign right before a number that does not follow a digit or letter.
            let negative = c == '-'
                && text[i + 1..].starts_with(|n: char| n.is_ascii_digit())
                && !out.ends_with(|p: char| p.is_ascii_alphanumeric());
            if negative {
                out.push('负');
            } else {
                out.push(c);
            }
            i += c.len_utf8();
            continue;
        }
        let (mut end, first) = digit_run(text, i);
        // Thousands separators: `1,000,000` is one number.
        let mut digits = first.to_owned();
        while text[end..].starts_with(',')
            && let (next_end, group) = digit_run(text, end + 1)
            && group.len() == 3
        {
            digits.push_str(group);
            end = next_end;
        }
        let ordinal = out.ends_with('第');
        let (reading, consumed) = read_one(&digits, &text[end..], ordinal);
        out.push_str(&reading);
        i = end + consumed;
    }
    out
}

/// The reading of the integer `digits` given what follows it (`ordinal`: it follows 第), and how many bytes
/// of `rest` it used.
fn read_one(digits: &str, rest: &str, ordinal: bool) -> (String, usize) {
    let next = rest.chars().next();
    match next {
        // 3.14: a decimal point directly between digits.
        Some('.') if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            let (end, fraction) = digit_run(rest, 1);
            let mut reading = decimal(digits, Some(fraction));
            let mut used = end;
            if rest[end..].starts_with('%') {
                reading = format!("百分之{reading}");
                used += 1;
            }
            (reading, used)
        }
        Some('%') => (format!("百分之{}", integer(digits)), 1),
        // 10:30 → 十点三十分; 10:05 → 十点零五分.
        Some(':') if clock_minutes(digits, rest).is_some() => {
            let minutes = clock_minutes(digits, rest).unwrap_or_default();
            let minute_reading = match minutes {
                "00" => String::new(),
                m if m.starts_with('0') => format!("零{}分", digit_by_digit(&m[1..])),
                m => format!("{}分", integer(m)),
            };
            (format!("{}点{minute_reading}", integer(digits)), 3)
        }
        // 1/2 → 二分之一.
        Some('/') if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            let (end, denominator) = digit_run(rest, 1);
            (
                format!("{}分之{}", integer(denominator), integer(digits)),
                end,
            )
        }
        // 3-5 → 三到五.
        Some('-') if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => {
            let (end, upper) = digit_run(rest, 1);
            (format!("{}到{}", integer(digits), integer(upper)), end)
        }
        Some('年') if digits.len() == 4 => (digit_by_digit(digits), 0),
        Some(c) if digits == "2" && !ordinal && MEASURE_WORDS.contains(c) => ("两".to_owned(), 0),
        _ if digits.starts_with('0') && digits.len() > 1 => (digit_by_digit(digits), 0),
        _ if digits.len() > 8 => (digit_by_digit(digits), 0),
        _ => (integer(digits), 0),
    }
}

/// The two minute digits of a clock time `h:mm` whose hour is `hour` and whose `:` starts `rest`.
fn clock_minutes<'a>(hour: &str, rest: &'a str) -> Option<&'a str> {
    let minutes = rest.get(1..3)?;
    let clock = hour.len() <= 2
        && minutes.bytes().all(|b| b.is_ascii_digit())
        && !rest[3..].starts_with(|c: char| c.is_ascii_digit());
    clock.then_some(minutes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_the_grouping_and_zero_rules() {
        let cases = [
            ("0", "零"),
            ("7", "七"),
            ("10", "十"),
            ("15", "十五"),
            ("20", "二十"),
            ("105", "一百零五"),
            ("110", "一百一十"),
            ("1000", "一千"),
            ("1001", "一千零一"),
            ("1010", "一千零一十"),
            ("10000", "一万"),
            ("10086", "一万零八十六"),
            ("120000", "十二万"),
            ("100000000", "一亿"),
            ("100010000", "一亿零一万"),
            ("2500", "两千五百"),
            ("20000", "两万"),
            ("12000", "一万二千"),
        ];
        for (digits, reading) in cases {
            assert_eq!(integer(digits), reading, "{digits}");
        }
    }

    #[test]
    fn numbers_in_text_are_read_by_their_kind() {
        let cases = [
            ("我有3个苹果", "我有三个苹果"),
            ("我有2个苹果", "我有两个苹果"),
            ("第2天", "第二天"),
            ("2024年1月5日", "二零二四年一月五日"),
            ("温度是-3度", "温度是负三度"),
            ("圆周率3.14", "圆周率三点一四"),
            ("打折50%", "打折百分之五十"),
            ("增长2.5%", "增长百分之二点五"),
            ("现在10:30了", "现在十点三十分了"),
            ("下午3:05", "下午三点零五分"),
            ("1/2的人", "二分之一的人"),
            ("3-5天", "三到五天"),
            ("电话13812345678", "电话一三八一二三四五六七八"),
            ("共1,000,000元", "共一百万元"),
            ("编号007", "编号零零七"),
            ("iPhone 15", "iPhone 十五"),
        ];
        for (text, reading) in cases {
            assert_eq!(read_numbers(text), reading, "{text}");
        }
    }

    #[test]
    fn text_without_digits_is_unchanged() {
        assert_eq!(read_numbers("你好，世界"), "你好，世界");
        assert_eq!(read_numbers("a-b"), "a-b");
    }
}
