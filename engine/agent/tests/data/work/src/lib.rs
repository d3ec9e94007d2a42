pub fn old_name() -> u32 {
    1
}
