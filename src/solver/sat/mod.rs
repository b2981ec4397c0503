//! SAT backing.
