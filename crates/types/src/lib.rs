//! SQL values and data types (see README.md): PostgreSQL OIDs and type names, text/binary
//! I/O, casts, operators, and row/key encodings. No catalog access, no I/O: the enum
//! types are what the coordinator publishes (`enums::publish`).

pub mod are;
pub mod cast;
pub mod codec;
pub mod datatype;
pub mod datestyle;
pub mod datetime;
pub mod datetime_fields;
pub mod enums;
pub mod io;
pub mod json;
pub mod json_text;
pub mod numeric;
pub mod ops;
pub mod timezone;
pub mod to_char;
pub mod uuid;
pub mod value;

pub use datatype::DataType;
pub use value::Value;
