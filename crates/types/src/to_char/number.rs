//! to_char(number, text): PostgreSQL 15's numeric template patterns (formatting.c's
//! NUM_processor, followed step by step so that blanks, signs and `#` overflow land
//! where PostgreSQL puts them). RN, EEEE, V, L and TH are refused (0A000).

use super::literal;
use crate::Value;
use pgerror::{codes, PgError, PgResult};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Nine,
    Zero,
    Decimal,
    Comma,
    Group,
    Minus,
    Plus,
    SignBoth,
    Sign,
    Bracket,
    FillMode,
    Blank,
}

const KEYS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Decimal),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::Blank),
    ("D", Key::Decimal),
    ("FM", Key::FillMode),
    ("G", Key::Group),
    ("MI", Key::Minus),
    ("PL", Key::Plus),
    ("PR", Key::Bracket),
    ("SG", Key::SignBoth),
    ("S", Key::Sign),
];
const REFUSED: &[&str] = &["RN", "EEEE", "V", "L", "TH", "C", "E", "SP"];

enum Node {
    Action(Key),
    Text(String),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LocaleSign {
    None,
    Pre,
    Post,
}

/// The template's description (formatting.c's NUMDesc).
struct Desc {
    pre: i64,
    post: i64,
    decimal: bool,
    zero: bool,
    zero_start: i64,
    zero_end: i64,
    fill: bool,
    minus: bool,
    plus: bool,
    bracket: bool,
    lsign: LocaleSign,
    pre_lsign_num: i64,
}

fn bad_format(message: &str) -> PgError {
    PgError::new(codes::SYNTAX_ERROR, message.to_string())
}

fn parse(template: &str) -> PgResult<(Vec<Node>, Desc)> {
    let mut d = Desc {
        pre: 0,
        post: 0,
        decimal: false,
        zero: false,
        zero_start: 0,
        zero_end: 0,
        fill: false,
        minus: false,
        plus: false,
        bracket: false,
        lsign: LocaleSign::None,
        pre_lsign_num: 0,
    };
    let mut nodes = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let upper = rest.get(..4).unwrap_or(rest).to_ascii_uppercase();
        let Some(&(name, key)) = KEYS.iter().find(|(name, _)| upper.starts_with(name)) else {
            if let Some(refused) = REFUSED.iter().find(|r| upper.starts_with(**r)) {
                return Err(PgError::new(
                    codes::FEATURE_NOT_SUPPORTED,
                    format!("not supported yet: the \"{refused}\" pattern of to_char for numbers"),
                ));
            }
            let mut text = String::new();
            rest = literal(rest, &mut text);
            nodes.push(Node::Text(text));
            continue;
        };
        rest = &rest[name.len()..];
        match key {
            Key::Nine | Key::Zero => {
                if d.bracket {
                    return Err(bad_format(&format!("\"{name}\" must be ahead of \"PR\"")));
                }
                if key == Key::Zero && !d.zero && !d.decimal {
                    d.zero = true;
                    d.zero_start = d.pre + 1;
                }
                if d.decimal {
                    d.post += 1;
                } else {
                    d.pre += 1;
                }
                if key == Key::Zero {
                    d.zero_end = d.pre + d.post;
                }
            }
            Key::Decimal => {
                if d.decimal {
                    return Err(bad_format("multiple decimal points"));
                }
                d.decimal = true;
            }
            Key::FillMode => d.fill = true,
            Key::Sign => {
                if d.lsign != LocaleSign::None {
                    return Err(bad_format("cannot use \"S\" twice"));
                }
                if d.plus || d.minus || d.bracket {
                    return Err(bad_format(
                        "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                    ));
                }
                d.lsign = if d.decimal {
                    LocaleSign::Post
                } else {
                    d.pre_lsign_num = d.pre;
                    LocaleSign::Pre
                };
            }
            Key::Minus | Key::Plus | Key::SignBoth => {
                if d.lsign != LocaleSign::None {
                    return Err(bad_format(&format!(
                        "cannot use \"S\" and \"{name}\" together"
                    )));
                }
                d.minus |= key != Key::Plus;
                d.plus |= key != Key::Minus;
            }
            Key::Bracket => {
                if d.lsign != LocaleSign::None || d.plus || d.minus {
                    return Err(bad_format(
                        "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                    ));
                }
                d.bracket = true;
            }
            Key::Comma | Key::Group | Key::Blank => {}
        }
        nodes.push(Node::Action(key));
    }
    Ok((nodes, d))
}

/// A number as formatting.c's callers hand it over: its absolute value's digits, with
/// `post` of them after a '.' (where `post` > 0), and its sign.
struct Digits {
    negative: bool,
    text: String,
    post: i64,
}

/// to_char of an integer, numeric or float value (None: not a number).
pub fn to_char(v: &Value, template: &str) -> PgResult<Option<String>> {
    let (nodes, desc) = parse(template)?;
    let post = desc.post;
    let digits = match v {
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            let n = v.as_i64().unwrap_or(0);
            let mut text = n.unsigned_abs().to_string();
            if post > 0 {
                text.push('.');
                text.extend(std::iter::repeat_n('0', post as usize));
            }
            Digits {
                negative: n < 0,
                text,
                post,
            }
        }
        Value::Numeric(n) => {
            let rounded = n.round(post)?.to_string();
            Digits {
                negative: rounded.starts_with('-'),
                text: rounded.trim_start_matches('-').to_string(),
                post,
            }
        }
        Value::Float4(f) => float_digits(*f as f64, post, 6),
        Value::Float8(f) => float_digits(*f, post, 15),
        _ => return Ok(None),
    };
    Ok(Some(format(&digits, &nodes, desc)))
}

/// float4_to_char/float8_to_char: at most `max_digits` significant digits in all (fewer
/// after the point for a large value); NaN and the infinities as their names.
fn float_digits(f: f64, template_post: i64, max_digits: i64) -> Digits {
    let name = match f {
        _ if f.is_nan() => Some("NaN"),
        _ if f.is_infinite() => Some("Infinity"),
        _ => None,
    };
    let whole = name.map_or_else(|| format!("{:.0}", f.abs()), str::to_string);
    let pre_len = whole.len() as i64;
    let post = if pre_len >= max_digits {
        0
    } else {
        template_post.min(max_digits - pre_len)
    };
    let text = name.map_or_else(|| format!("{:.*}", post as usize, f), str::to_string);
    Digits {
        negative: f < 0.0 || text.starts_with('-'),
        text: text.trim_start_matches('-').to_string(),
        post,
    }
}

/// Formats `digits` by the parsed template.
fn format(digits: &Digits, nodes: &[Node], mut d: Desc) -> String {
    d.post = digits.post;
    let mut number: Vec<u8> = digits.text.as_bytes().to_vec();
    let pre_len = number
        .iter()
        .position(|&c| c == b'.')
        .unwrap_or(number.len()) as i64;
    let mut out_pre_spaces = 0;
    if pre_len < d.pre {
        out_pre_spaces = d.pre - pre_len;
    } else if pre_len > d.pre {
        number = vec![b'#'; (d.pre + d.post + 1) as usize];
        number[d.pre as usize] = b'.';
    }
    let sign = if digits.negative { b'-' } else { b'+' };
    if d.zero_start > 0 {
        d.zero_start -= 1;
    }
    // MI and SG show the sign where they stand; PL alone leaves a minus to the number.
    let sign_wrote = if d.plus || d.minus {
        !d.plus || d.minus
    } else {
        if sign != b'-' && d.fill {
            d.bracket = false;
        }
        if d.lsign == LocaleSign::Pre && d.pre == d.pre_lsign_num {
            d.lsign = LocaleSign::Post;
        }
        sign == b'+' && d.fill && d.lsign == LocaleSign::None
    };
    let mut num_count = d.post + d.pre - 1;
    let mut last_relevant = None;
    if d.fill && d.decimal {
        last_relevant = last_relevant_decimal(&number);
        if let Some(relevant) = last_relevant {
            if d.zero_end > out_pre_spaces {
                let last_zero = (number.len() as i64 - 1).min(d.zero_end - out_pre_spaces);
                if (relevant as i64) < last_zero {
                    last_relevant = Some(last_zero as usize);
                }
            }
        }
    }
    if !sign_wrote && out_pre_spaces == 0 {
        num_count += 1;
    }
    let mut p = Processor {
        d,
        number,
        number_p: 0,
        last_relevant,
        out: Vec::new(),
        sign,
        sign_wrote,
        num_in: false,
        num_curr: 0,
        num_count,
        out_pre_spaces,
    };
    for node in nodes {
        match node {
            Node::Text(text) => p.out.extend_from_slice(text.as_bytes()),
            Node::Action(key @ (Key::Nine | Key::Zero | Key::Decimal)) => {
                p.digit_position(*key == Key::Zero)
            }
            Node::Action(Key::Comma | Key::Group) => {
                if p.num_in {
                    p.out.push(b',');
                } else if !p.d.fill {
                    p.out.push(b' ');
                }
            }
            Node::Action(Key::Minus) => p.sign_position(b'-'),
            Node::Action(Key::Plus) => p.sign_position(b'+'),
            Node::Action(Key::SignBoth) => p.out.push(p.sign),
            Node::Action(_) => {}
        }
    }
    // A digit written past the end of the number is formatting.c's string terminator.
    let end = p.out.iter().position(|&c| c == 0).unwrap_or(p.out.len());
    p.out.truncate(end);
    String::from_utf8_lossy(&p.out).into_owned()
}

/// formatting.c's get_last_relevant_decnum: the last nonzero digit after the point, or
/// the point itself.
fn last_relevant_decimal(number: &[u8]) -> Option<usize> {
    let point = number.iter().position(|&c| c == b'.')?;
    let last = (point + 1..number.len()).rev().find(|&i| number[i] != b'0');
    Some(last.unwrap_or(point))
}

struct Processor {
    d: Desc,
    number: Vec<u8>,
    number_p: usize,
    last_relevant: Option<usize>,
    out: Vec<u8>,
    sign: u8,
    sign_wrote: bool,
    num_in: bool,
    num_curr: i64,
    num_count: i64,
    out_pre_spaces: i64,
}

impl Processor {
    /// MI or PL: its sign where the number has it, else a blank (none under FM).
    fn sign_position(&mut self, shown: u8) {
        if self.sign == shown {
            self.out.push(shown);
        } else if !self.d.fill {
            self.out.push(b' ');
        }
    }

    /// "9.9" → " .1": a leading zero before the point is a blank.
    fn predecimal_space(&self) -> bool {
        !self.d.zero && self.number_p == 0 && self.number.first() == Some(&b'0') && self.d.post != 0
    }

    fn relevant_is_point(&self) -> bool {
        self.last_relevant.is_some_and(|i| self.number[i] == b'.')
    }

    /// formatting.c's NUM_numpart_to_char: a 9, 0 or decimal point of the template.
    fn digit_position(&mut self, zero_pattern: bool) {
        self.num_in = false;
        if !self.sign_wrote
            && (self.num_curr >= self.out_pre_spaces
                || (self.d.zero && self.d.zero_start == self.num_curr))
            && (!self.predecimal_space() || self.relevant_is_point())
        {
            if self.d.lsign != LocaleSign::None {
                if self.d.lsign == LocaleSign::Pre {
                    self.out.push(self.sign);
                    self.sign_wrote = true;
                }
            } else if self.d.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'<' });
                self.sign_wrote = true;
            } else {
                if self.sign == b'-' {
                    self.out.push(b'-');
                } else if !self.d.fill {
                    self.out.push(b' ');
                }
                self.sign_wrote = true;
            }
        }
        if self.num_curr < self.out_pre_spaces
            && (self.d.zero_start > self.num_curr || !self.d.zero)
        {
            if !self.d.fill {
                self.out.push(b' ');
            }
        } else if self.d.zero
            && self.num_curr < self.out_pre_spaces
            && self.d.zero_start <= self.num_curr
        {
            self.out.push(b'0');
            self.num_in = true;
        } else {
            let c = self.number.get(self.number_p).copied().unwrap_or(0);
            let past_relevant = self
                .last_relevant
                .is_some_and(|i| self.number_p > i && !zero_pattern);
            if c == b'.' {
                if !self.relevant_is_point() || self.d.fill {
                    self.out.push(b'.');
                }
            } else if past_relevant {
                // FM: trailing zeros after the point are left out
            } else if self.predecimal_space() {
                if !self.d.fill {
                    self.out.push(b' ');
                } else if self.relevant_is_point() {
                    self.out.push(b'0');
                }
            } else {
                self.out.push(c);
                self.num_in = true;
            }
            if self.number_p < self.number.len() {
                self.number_p += 1;
            }
        }
        let mut end =
            self.num_count + i64::from(self.out_pre_spaces != 0) + i64::from(self.d.decimal);
        if self.last_relevant.is_some() && self.last_relevant == Some(self.number_p) {
            end = self.num_curr;
        }
        if self.num_curr + 1 == end {
            if self.sign_wrote && self.d.bracket {
                self.out.push(if self.sign == b'+' { b' ' } else { b'>' });
            } else if self.d.lsign == LocaleSign::Post {
                self.out.push(self.sign);
            }
        }
        self.num_curr += 1;
    }
}
