mod helpers;

pub use helpers::add;
