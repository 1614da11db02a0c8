package main

import (
	"database/sql"

	_ "github.com/mattn/go-sqlite3"
)

// sqlOpen opens a database as any SQLite client would, to damage it on purpose.
func sqlOpen(path string) (*sql.DB, error) { return sql.Open("sqlite3", "file:"+path) }
