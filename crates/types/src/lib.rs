//! SQL values and data types (see README.md). STUB: the API below is the contract;
//! bodies are being filled in.

pub mod datatype;
pub mod value;

pub use datatype::DataType;
pub use value::Value;
