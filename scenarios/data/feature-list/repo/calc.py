"""calc: a tiny arithmetic library, built feature by feature."""
