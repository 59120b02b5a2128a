//! The coordinator's web console (README.md): served on the process's HTTP port beside
//! `/metrics` (`observability::Pages`). A browser logs in with a database role; the login
//! is a real connection to this coordinator as if from the browser's address (its access
//! rules, authentication and limits: `coordinator::Connector`), and every page's data is a
//! fixed read-only query on that connection, so the role's own privileges decide what it
//! sees. Throughput and latency come from the coordinator's metrics, sampled each second.

mod logins;
mod samples;

use coordinator::Connector;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use logins::{Login, Logins};
use samples::Samples;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_postgres::SimpleQueryMessage;

const CONSOLE_HTML: &str = include_str!("assets/console.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const LOGIN_HTML: &str = include_str!("assets/login.html");
/// The login cookie's name.
const COOKIE_NAME: &str = "meridian_console";
/// The longest login form read.
const MAX_FORM_BYTES: usize = 8 << 10;

/// The web console of one coordinator.
#[derive(Clone)]
pub struct Console(Arc<Inner>);

struct Inner {
    connector: Connector,
    logins: Logins,
    samples: Samples,
}

impl Console {
    /// A console for the coordinator `connector` opens connections to; starts sampling its
    /// metrics (on the current runtime).
    pub fn start(connector: Connector) -> Console {
        let inner = Arc::new(Inner {
            connector,
            logins: Logins::default(),
            samples: Samples::default(),
        });
        let weak = Arc::downgrade(&inner);
        drop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                inner.samples.take();
                inner.logins.expire();
            }
        }));
        Console(inner)
    }
}

impl observability::Pages for Console {
    fn answer(&self, req: Request<Incoming>, peer: SocketAddr) -> observability::Answer {
        Box::pin(answer(self.0.clone(), req, peer))
    }
}

async fn answer(
    inner: Arc<Inner>,
    req: Request<Incoming>,
    peer: SocketAddr,
) -> Response<Full<Bytes>> {
    let token = cookie_token(&req);
    let login = token.as_deref().and_then(|t| inner.logins.get(t));
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/") => match login {
            Some(_) => page(StatusCode::OK, "text/html", CONSOLE_HTML.into()),
            None => redirect("/login", None),
        },
        (&Method::GET, "/console.js") => page(StatusCode::OK, "text/javascript", CONSOLE_JS.into()),
        (&Method::GET, "/login") => login_page(StatusCode::OK, None),
        (&Method::POST, "/login") => log_in(&inner, req, peer).await,
        (&Method::POST, "/logout") => {
            if let Some(token) = &token {
                inner.logins.remove(token);
            }
            redirect("/login", Some(format!("{COOKIE_NAME}=; Path=/; Max-Age=0")))
        }
        (&Method::GET, path) if path.starts_with("/api/") => match login {
            Some(login) => api(&inner, token.as_deref().unwrap_or_default(), &login, path).await,
            None => json_answer(StatusCode::UNAUTHORIZED, json!({"error": "log in first"})),
        },
        _ => page(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    }
}

/// Checks the form's role and password by connecting as that role from the browser's
/// address; the connection is then the login's.
async fn log_in(inner: &Inner, req: Request<Incoming>, peer: SocketAddr) -> Response<Full<Bytes>> {
    let body = match Limited::new(req.into_body(), MAX_FORM_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return login_page(StatusCode::PAYLOAD_TOO_LARGE, Some("the form is too large")),
    };
    let (mut user, mut password) = (String::new(), String::new());
    for (name, value) in form_urlencoded::parse(&body) {
        match &*name {
            "user" => user = value.into_owned(),
            "password" => password = value.into_owned(),
            _ => {}
        }
    }
    if user.is_empty() {
        return login_page(StatusCode::UNAUTHORIZED, Some("a role name is required"));
    }
    match Login::connect(&inner.connector, peer, &user, &password).await {
        Ok(login) => {
            let token = inner.logins.insert(login);
            redirect(
                "/",
                Some(format!(
                    "{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Strict"
                )),
            )
        }
        Err(message) => login_page(StatusCode::UNAUTHORIZED, Some(&message)),
    }
}

async fn api(inner: &Inner, token: &str, login: &Login, path: &str) -> Response<Full<Bytes>> {
    let data = match path {
        "/api/overview" => rows(
            login,
            "SELECT node_name, role, address, state FROM meridian_nodes",
        )
        .await
        .map(|nodes| json!({"user": login.user, "nodes": nodes, "samples": inner.samples.json()})),
        "/api/sessions" => rows(
            login,
            "SELECT pid, usename, application_name, client_addr, state, wait_event_type, \
             wait_event, backend_start, xact_start, query_start, query \
             FROM pg_stat_activity ORDER BY backend_start",
        )
        .await
        .map(|rows| json!({"rows": rows})),
        "/api/waits" => rows(
            login,
            "SELECT pid, usename, wait_event_type, wait_event, now() - query_start AS waiting, \
             query FROM pg_stat_activity WHERE wait_event_type NOT IN ('Client', 'Activity') \
             ORDER BY query_start",
        )
        .await
        .map(|rows| json!({"rows": rows})),
        "/api/statements" => rows(
            login,
            "SELECT query, calls, round(total_exec_time::numeric, 3) AS total_ms, \
             round(mean_exec_time::numeric, 3) AS mean_ms, round(max_exec_time::numeric, 3) \
             AS max_ms, rows FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20",
        )
        .await
        .map(|rows| json!({"rows": rows})),
        _ => return json_answer(StatusCode::NOT_FOUND, json!({"error": "no such data"})),
    };
    match data {
        Ok(data) => json_answer(StatusCode::OK, data),
        Err(e) if login.client.is_closed() => {
            // The session ended (terminated, or the server restarted): log in again.
            inner.logins.remove(token);
            json_answer(StatusCode::UNAUTHORIZED, json!({"error": e}))
        }
        Err(e) => json_answer(StatusCode::INTERNAL_SERVER_ERROR, json!({"error": e})),
    }
}

/// The rows of `sql` as objects of text values (NULL as null).
async fn rows(login: &Login, sql: &str) -> Result<Value, String> {
    let messages = login
        .client
        .simple_query(sql)
        .await
        .map_err(|e| logins::message(&e))?;
    Ok(Value::Array(
        messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(Value::Object(
                    (row.columns().iter().enumerate())
                        .map(|(i, c)| {
                            let value = row.get(i).map_or(Value::Null, |v| Value::String(v.into()));
                            (c.name().to_string(), value)
                        })
                        .collect(),
                )),
                _ => None,
            })
            .collect(),
    ))
}

fn cookie_token(req: &Request<Incoming>) -> Option<String> {
    let prefix = format!("{COOKIE_NAME}=");
    req.headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .find_map(|c| c.trim().strip_prefix(&prefix).map(str::to_string))
        .filter(|t| !t.is_empty())
}

fn login_page(status: StatusCode, error: Option<&str>) -> Response<Full<Bytes>> {
    let error = error.map_or_else(String::new, |e| {
        format!("<p id=\"error\" class=\"error\">{}</p>", escape_html(e))
    });
    page(
        status,
        "text/html",
        LOGIN_HTML.replace("<!--error-->", &error),
    )
}

fn escape_html(text: &str) -> String {
    text.chars()
        .fold(String::with_capacity(text.len()), |mut out, c| {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                c => out.push(c),
            }
            out
        })
}

fn json_answer(status: StatusCode, value: Value) -> Response<Full<Bytes>> {
    page(status, "application/json", value.to_string())
}

fn page(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_str(&format!("{content_type}; charset=utf-8")).expect("ascii"),
    );
    // Live data, never to be cached; the pages run only their own script and are never
    // framed by another site.
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    response
}

fn redirect(to: &'static str, cookie: Option<String>) -> Response<Full<Bytes>> {
    let mut response = page(StatusCode::SEE_OTHER, "text/plain", String::new());
    response
        .headers_mut()
        .insert(LOCATION, HeaderValue::from_static(to));
    if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(SET_COOKIE, cookie);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::escape_html;

    #[test]
    fn html_is_escaped() {
        assert_eq!(
            escape_html("role \"<b>x</b>\" & 'y'"),
            "role &quot;&lt;b&gt;x&lt;/b&gt;&quot; &amp; &#39;y&#39;"
        );
    }
}
