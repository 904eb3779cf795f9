//! Drawing an [`AuditReport`](crate::AuditReport): a plain-text table for the terminal, and a
//! self-contained HTML page.

pub mod html;
pub mod table;
