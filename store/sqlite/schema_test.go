package sqlite

import (
	"strings"
	"testing"
)

// The four tables that hold a record each declare its columns in full
// (schema.go keeps every CREATE TABLE whole, as sqlite_master stores it),
// while recordCols, recordArgs and recordScan serve all four. This holds the
// declarations to that: every record column in every record table, with the
// type and nullability records gives it.
func TestRecordTablesDeclareTheSameRecordColumns(t *testing.T) {
	o := testOptions(t)
	p := mustOpen(t, o)
	p.Close()
	db := rawDB(t, o.FilePath)
	type column struct {
		typ     string
		notNull bool
	}
	columns := func(table string) map[string]column {
		rows, err := db.Query(`SELECT name, type, "notnull" FROM pragma_table_info(?)`, table)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]column{}
		for rows.Next() {
			var name, typ string
			var notNull int
			if err := rows.Scan(&name, &typ, &notNull); err != nil {
				t.Fatal(err)
			}
			out[name] = column{typ, notNull != 0}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := columns("records")
	for _, table := range []string{"records", "latest_values", "queue_items", "held_publishes"} {
		got := columns(table)
		for _, name := range strings.Split(recordCols, ", ") {
			w, ok := want[name]
			if !ok {
				t.Fatalf("records has no column %s", name)
			}
			if g, ok := got[name]; !ok || g != w {
				t.Errorf("%s.%s is %+v (present %v), records has %+v", table, name, g, ok, w)
			}
		}
	}
}
