//! Test binary: runs `gtm::server` alone (the product binary is `meridian gtm`).
//!
//! Usage: gtm-server --data-dir DIR --listen HOST:PORT [--window N]

use std::path::PathBuf;

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stdout)
        .with_ansi(false)
        .init();
    let mut data_dir: Option<PathBuf> = None;
    let mut listen = "127.0.0.1:6543".to_string();
    let mut opts = gtm::server::ServerOptions::default();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--data-dir" => data_dir = Some(PathBuf::from(val())),
            "--listen" => listen = val(),
            "--window" => {
                opts.oracle.window = val().parse().unwrap_or_else(|_| usage("bad --window"))
            }
            _ => usage(&format!("unknown argument {a}")),
        }
    }
    let data_dir = data_dir.unwrap_or_else(|| usage("--data-dir is required"));
    let listen = listen
        .parse()
        .unwrap_or_else(|_| usage("bad --listen address"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Err(e) = rt.block_on(gtm::server::run_with(data_dir, listen, opts)) {
        eprintln!("gtm-server: {e}");
        std::process::exit(1);
    }
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "gtm-server: {msg}\nusage: gtm-server --data-dir DIR --listen HOST:PORT [--window N]"
    );
    std::process::exit(2);
}
