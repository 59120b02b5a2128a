//! Authentication without I/O (docs/decisions/0040): what a role's stored password is
//! (`password`: SCRAM-SHA-256 and md5 verifiers in PostgreSQL's formats), the server's
//! side of a SCRAM-SHA-256 exchange (`scram`), and the access rules of a pg_hba.conf
//! file (`hba`). The coordinator moves the messages; this crate decides.

pub mod hba;
pub mod password;
pub mod scram;
