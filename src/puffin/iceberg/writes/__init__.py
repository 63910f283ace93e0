"""Writing data into tables: appends that keep a v3 table writable from Python."""
