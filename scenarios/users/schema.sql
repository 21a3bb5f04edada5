-- The users scenario's database, created fresh for every run (svcbench's `sqlite` dependency).
-- Seed 002's services write with WAL, so the file is in WAL mode from the start.
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, UNIQUE(name));
