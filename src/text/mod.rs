//! Text algorithms whose exact Python behaviour gigscope reproduces.

pub mod difflib;
pub mod pyfloat;
