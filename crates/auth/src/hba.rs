//! Access rules in pg_hba.conf's format: `local DATABASE USER METHOD` and
//! `host|hostssl|hostnossl DATABASE USER ADDRESS METHOD`, the first line that matches a
//! connection deciding how it authenticates. Databases: `all`, `sameuser` or names;
//! users: `all` or names (comma-separated lists, double quotes for literal names);
//! addresses: `all`, CIDR, or an address and a mask. What Meridian cannot honour
//! (other methods, options, `+group`, `@file`, host names) makes the file invalid, so a
//! rule is never silently weaker than it reads.

use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Trust,
    Reject,
    ScramSha256,
    Md5,
    Password,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConnectionType {
    Local,
    Host,
    HostSsl,
    HostNoSsl,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    All,
    SameUser,
    /// The `replication` keyword: Meridian takes no replication connections, so it
    /// matches none.
    Replication,
    Named(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Address {
    All,
    Network { addr: IpAddr, prefix: u8 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    connection: ConnectionType,
    databases: Vec<Name>,
    users: Vec<Name>,
    address: Address,
    method: Method,
}

/// The rules of one file, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    rules: Vec<Rule>,
}

/// What a rule is matched against.
#[derive(Debug, Clone, Copy)]
pub struct Connection<'a> {
    /// The peer's address; None over the Unix-domain socket.
    pub address: Option<IpAddr>,
    pub ssl: bool,
    pub user: &'a str,
    pub database: &'a str,
}

impl Rules {
    /// Without a rules file: every connection trusted (the zero-setup default).
    pub fn trust_all() -> Rules {
        let all = |connection| Rule {
            connection,
            databases: vec![Name::All],
            users: vec![Name::All],
            address: Address::All,
            method: Method::Trust,
        };
        Rules {
            rules: vec![all(ConnectionType::Local), all(ConnectionType::Host)],
        }
    }

    /// Parses a file's text; Err: `line N: what is wrong`.
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut rules = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let fields = tokenize(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            if fields.is_empty() {
                continue;
            }
            rules.push(rule(&fields).map_err(|e| format!("line {}: {e}", n + 1))?);
        }
        Ok(Rules { rules })
    }

    /// How `c` authenticates: the method of the first matching rule, None if none does.
    pub fn method(&self, c: &Connection) -> Option<Method> {
        self.rules.iter().find(|r| r.matches(c)).map(|r| r.method)
    }
}

impl Rule {
    fn matches(&self, c: &Connection) -> bool {
        let transport = match (self.connection, c.address) {
            (ConnectionType::Local, None) => true,
            (ConnectionType::Host, Some(_)) => true,
            (ConnectionType::HostSsl, Some(_)) => c.ssl,
            (ConnectionType::HostNoSsl, Some(_)) => !c.ssl,
            _ => false,
        };
        let address = match (&self.address, c.address) {
            (Address::All, _) => true,
            (Address::Network { addr, prefix }, Some(peer)) => in_network(peer, *addr, *prefix),
            (Address::Network { .. }, None) => false,
        };
        transport
            && address
            && self.databases.iter().any(|d| match d {
                Name::All => true,
                Name::SameUser => c.database == c.user,
                Name::Replication => false,
                Name::Named(n) => n == c.database,
            })
            && self.users.iter().any(|u| match u {
                Name::All => true,
                Name::SameUser | Name::Replication => false,
                Name::Named(n) => n == c.user,
            })
    }
}

fn in_network(peer: IpAddr, network: IpAddr, prefix: u8) -> bool {
    // An IPv4 client seen through an IPv6 socket matches IPv4 rules.
    let peer = match peer {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
        v4 => v4,
    };
    match (peer, network) {
        (IpAddr::V4(p), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(p) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(p), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(p) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// One word of a field: its text and whether it was quoted (a quoted `all` is a name).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    quoted: bool,
}

/// A line's fields, each a comma-separated list of words; comments dropped.
fn tokenize(line: &str) -> Result<Vec<Vec<Word>>, String> {
    let mut fields: Vec<Vec<Word>> = Vec::new();
    let mut chars = line.chars().peekable();
    let mut continues_field = false;
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) && !continues_field {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => break,
            _ => {}
        }
        let mut word = Word {
            text: String::new(),
            quoted: false,
        };
        let mut in_quotes = false;
        while let Some(&c) = chars.peek() {
            if c == '"' {
                chars.next();
                in_quotes = !in_quotes;
                word.quoted = true;
            } else if !in_quotes && (c.is_whitespace() || c == ',' || c == '#') {
                break;
            } else {
                word.text.push(c);
                chars.next();
            }
        }
        if in_quotes {
            return Err("unterminated quoted string".into());
        }
        if continues_field {
            fields.last_mut().expect("a field to continue").push(word);
        } else {
            fields.push(vec![word]);
        }
        continues_field = chars.peek() == Some(&',');
        if continues_field {
            chars.next();
        }
    }
    Ok(fields)
}

fn single<'a>(field: &'a [Word], what: &str) -> Result<&'a Word, String> {
    match field {
        [w] => Ok(w),
        _ => Err(format!("{what} cannot be a list")),
    }
}

fn rule(fields: &[Vec<Word>]) -> Result<Rule, String> {
    let kind = single(&fields[0], "connection type")?;
    let connection = match kind.text.as_str() {
        "local" => ConnectionType::Local,
        "host" => ConnectionType::Host,
        "hostssl" => ConnectionType::HostSsl,
        "hostnossl" => ConnectionType::HostNoSsl,
        other => return Err(format!("invalid connection type \"{other}\"")),
    };
    let field = |i: usize, what: &str| {
        fields
            .get(i)
            .ok_or_else(|| format!("end-of-line before {what} specification"))
    };
    let databases = field(1, "database")?
        .iter()
        .map(|w| match (w.quoted, w.text.as_str()) {
            (false, "all") => Ok(Name::All),
            (false, "sameuser") => Ok(Name::SameUser),
            (false, "replication") => Ok(Name::Replication),
            (false, s) if s == "samerole" || s == "samegroup" || s.starts_with('@') => {
                Err(format!("database \"{s}\" is not supported by Meridian"))
            }
            (_, s) => Ok(Name::Named(s.to_string())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let users = field(2, "role")?
        .iter()
        .map(|w| match (w.quoted, w.text.as_str()) {
            (false, "all") => Ok(Name::All),
            (false, s) if s.starts_with('+') || s.starts_with('@') => Err(format!(
                "user \"{s}\" is not supported by Meridian (no role membership or included files)"
            )),
            (_, s) => Ok(Name::Named(s.to_string())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut next = 3;
    let address = if connection == ConnectionType::Local {
        Address::All
    } else {
        let word = single(field(3, "IP address")?, "IP address")?;
        next = 4;
        match word.text.as_str() {
            "all" => Address::All,
            text => {
                let (addr, prefix) = match text.split_once('/') {
                    Some((addr, prefix)) => (addr, Some(prefix)),
                    None => (text, None),
                };
                let addr: IpAddr = addr.parse().map_err(|_| {
                    format!("invalid IP address \"{addr}\" (host names, samehost and samenet are not supported)")
                })?;
                let max = if addr.is_ipv4() { 32 } else { 128 };
                let prefix = match prefix {
                    Some(p) => p
                        .parse::<u8>()
                        .ok()
                        .filter(|p| *p <= max)
                        .ok_or_else(|| format!("invalid CIDR mask in address \"{text}\""))?,
                    None => {
                        let mask = single(field(4, "netmask")?, "netmask")?;
                        next = 5;
                        mask_prefix(&mask.text, addr.is_ipv4())
                            .ok_or_else(|| format!("invalid IP mask \"{}\"", mask.text))?
                    }
                };
                Address::Network { addr, prefix }
            }
        }
    };
    let method_word = single(
        field(next, "authentication method")?,
        "authentication method",
    )?;
    let method = match method_word.text.as_str() {
        "trust" => Method::Trust,
        "reject" => Method::Reject,
        "scram-sha-256" => Method::ScramSha256,
        "md5" => Method::Md5,
        "password" => Method::Password,
        m @ ("peer" | "ident" | "gss" | "sspi" | "pam" | "ldap" | "radius" | "cert" | "bsd") => {
            return Err(format!(
                "authentication method \"{m}\" is not supported by Meridian"
            ))
        }
        m => return Err(format!("invalid authentication method \"{m}\"")),
    };
    if let Some(option) = fields.get(next + 1) {
        return Err(format!(
            "authentication option \"{}\" is not supported by Meridian",
            option[0].text
        ));
    }
    Ok(Rule {
        connection,
        databases,
        users,
        address,
        method,
    })
}

/// The prefix length of a contiguous netmask such as 255.255.255.0.
fn mask_prefix(mask: &str, ipv4: bool) -> Option<u8> {
    let bits: u128 = match mask.parse::<IpAddr>().ok()? {
        IpAddr::V4(m) if ipv4 => u128::from(u32::from(m)) << 96,
        IpAddr::V6(m) if !ipv4 => u128::from(m),
        _ => return None,
    };
    let ones = bits.leading_ones();
    (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn<'a>(address: Option<&str>, ssl: bool, user: &'a str, db: &'a str) -> Connection<'a> {
        Connection {
            address: address.map(|a| a.parse().unwrap()),
            ssl,
            user,
            database: db,
        }
    }

    #[test]
    fn first_matching_line_wins() {
        let rules = Rules::parse(
            "# comment\n\
             host    replication all 0.0.0.0/0      trust\n\
             local   all      postgres              trust\n\
             hostssl all      all   10.0.0.0/8      scram-sha-256\n\
             host    app,\"all\" alice 127.0.0.1 255.255.255.255 md5 # trailing\n\
             hostnossl all    all   0.0.0.0/0       reject\n\
             host    sameuser all   ::1/128         password\n",
        )
        .unwrap();
        assert_eq!(
            rules.method(&conn(None, false, "postgres", "x")),
            Some(Method::Trust)
        );
        assert_eq!(rules.method(&conn(None, false, "bob", "x")), None);
        assert_eq!(
            rules.method(&conn(Some("10.1.2.3"), true, "bob", "x")),
            Some(Method::ScramSha256)
        );
        assert_eq!(
            rules.method(&conn(Some("10.1.2.3"), false, "bob", "x")),
            Some(Method::Reject)
        );
        assert_eq!(
            rules.method(&conn(Some("127.0.0.1"), false, "alice", "all")),
            Some(Method::Md5),
            "a quoted all is a database name"
        );
        assert_eq!(
            rules.method(&conn(Some("::ffff:127.0.0.1"), false, "alice", "app")),
            Some(Method::Md5)
        );
        assert_eq!(
            rules.method(&conn(Some("::1"), true, "carol", "carol")),
            Some(Method::Password)
        );
        assert_eq!(rules.method(&conn(Some("::1"), true, "carol", "app")), None);
        assert_eq!(
            rules.method(&conn(Some("10.0.0.1"), false, "x", "replication")),
            Some(Method::Reject),
            "replication names no database"
        );
    }

    #[test]
    fn what_cannot_be_honoured_is_an_error() {
        for bad in [
            "local all all peer",
            "host all all 127.0.0.1/32 trust clientcert=verify-full",
            "host all +admins 127.0.0.1/32 trust",
            "host all all localhost trust",
            "host all all 127.0.0.1/33 trust",
            "host all all 127.0.0.1 255.0.255.0 trust",
            "hots all all all trust",
            "host all all all",
            "host \"all all all trust",
        ] {
            assert!(Rules::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn without_a_file_everything_is_trusted() {
        let rules = Rules::trust_all();
        assert_eq!(
            rules.method(&conn(None, false, "a", "b")),
            Some(Method::Trust)
        );
        assert_eq!(
            rules.method(&conn(Some("192.0.2.1"), true, "a", "b")),
            Some(Method::Trust)
        );
    }
}
