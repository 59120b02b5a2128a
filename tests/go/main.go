// Command pgx_copy runs the same pgx work on two servers (PostgreSQL 15 and Meridian) and
// compares what pgx gives back: a binary COPY (conn.CopyFrom) of a few thousand rows of
// every common type with edge values and NULLs, read back with pgx's default formats
// (binary where pgx chooses it), and CopyFrom errors (duplicate key: 23505; the
// connection stays usable; a rolled back COPY leaves nothing).
//
// Usage: pgx_copy REFERENCE_DSN SUBJECT_DSN. Prints a JSON summary and exits 0 when both
// servers agree; otherwise prints the first difference and exits 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

const table = "drv_go_copy"

var columns = []string{"id", "i", "b", "t", "n", "f", "ts", "by", "u", "j", "d"}

const ddl = `CREATE TABLE ` + table + ` (id int PRIMARY KEY, i int, b bigint, t text,
	n numeric, f bool, ts timestamptz, by bytea, u uuid, j jsonb, d float8)`

// outcome is what one server gave back: the rows as pgx decoded them and the errors'
// SQLSTATEs, each as text so that the two servers' outcomes compare with ==.
type outcome struct {
	Rows      []string          `json:"-"`
	RowCount  int               `json:"rows"`
	Copied    int64             `json:"copied"`
	Formats   []int16           `json:"result_formats"`
	Errors    map[string]string `json:"errors"`
	AfterErrs []string          `json:"after_errors"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pgx_copy REFERENCE_DSN SUBJECT_DSN")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rows := sourceRows()
	var results [2]outcome
	for k, dsn := range os.Args[1:] {
		res, err := run(ctx, dsn, rows)
		if err != nil {
			fail("%s: %v", []string{"reference", "subject"}[k], err)
		}
		results[k] = res
	}
	ref, sub := results[0], results[1]
	if len(ref.Rows) != len(sub.Rows) {
		fail("row count: reference %d, subject %d", len(ref.Rows), len(sub.Rows))
	}
	for i := range ref.Rows {
		if ref.Rows[i] != sub.Rows[i] {
			fail("row %d differs:\nreference: %s\nsubject:   %s", i, ref.Rows[i], sub.Rows[i])
		}
	}
	refSummary, _ := json.Marshal(ref)
	subSummary, _ := json.Marshal(sub)
	if string(refSummary) != string(subSummary) {
		fail("summary differs:\nreference: %s\nsubject:   %s", refSummary, subSummary)
	}
	fmt.Println(string(subSummary))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func run(ctx context.Context, dsn string, source [][]any) (outcome, error) {
	res := outcome{Errors: map[string]string{}}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{"DROP TABLE IF EXISTS " + table, ddl} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return res, fmt.Errorf("%s: %w", sql, err)
		}
	}
	defer conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)

	res.Copied, err = conn.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(source))
	if err != nil {
		return res, fmt.Errorf("CopyFrom: %w", err)
	}
	if res.Rows, res.Formats, err = readBack(ctx, conn); err != nil {
		return res, err
	}
	res.RowCount = len(res.Rows)

	// A key that is already there, and a key twice in one COPY: 23505 each time, nothing of
	// the failed COPY stays, and the connection goes on.
	dupExisting := [][]any{{len(source) + 1, 1, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{0, 2, nil, nil, nil, nil, nil, nil, nil, nil, nil}}
	dupWithin := [][]any{{len(source) + 2, 1, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{len(source) + 2, 2, nil, nil, nil, nil, nil, nil, nil, nil, nil}}
	for _, failing := range []struct {
		name  string
		batch [][]any
	}{{"duplicate_existing", dupExisting}, {"duplicate_within", dupWithin}} {
		_, err := conn.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(failing.batch))
		res.Errors[failing.name] = sqlstate(err)
		res.AfterErrs = append(res.AfterErrs, failing.name+": "+count(ctx, conn))
	}
	// pgx sends a Go string for jsonb as the JSON text itself: the server parses it.
	badJSON := [][]any{{len(source) + 3, nil, nil, nil, nil, nil, nil, nil, nil, "not json", nil}}
	_, err = conn.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(badJSON))
	res.Errors["invalid_json"] = sqlstate(err)
	res.AfterErrs = append(res.AfterErrs, "invalid_json: "+count(ctx, conn))
	_, err = conn.CopyFrom(ctx, pgx.Identifier{"drv_go_no_such_table"}, columns,
		pgx.CopyFromRows(dupExisting))
	res.Errors["no_such_table"] = sqlstate(err)
	res.AfterErrs = append(res.AfterErrs, "no_such_table: "+count(ctx, conn))

	// COPY inside a transaction that rolls back leaves nothing behind.
	tx, err := conn.Begin(ctx)
	if err != nil {
		return res, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, columns,
		pgx.CopyFromRows(dupWithin[:1])); err != nil {
		return res, fmt.Errorf("CopyFrom in a transaction: %w", err)
	}
	res.AfterErrs = append(res.AfterErrs, "in_transaction: "+countIn(ctx, tx))
	if err := tx.Rollback(ctx); err != nil {
		return res, err
	}
	res.AfterErrs = append(res.AfterErrs, "rolled_back: "+count(ctx, conn))
	return res, nil
}

func readBack(ctx context.Context, conn *pgx.Conn) ([]string, []int16, error) {
	rows, err := conn.Query(ctx, "SELECT "+strings.Join(columns, ", ")+" FROM "+table+" ORDER BY id")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var formats []int16
	for _, fd := range rows.FieldDescriptions() {
		formats = append(formats, fd.Format)
	}
	var out []string
	for rows.Next() {
		values, err := rows.Values()
		if err != nil {
			return nil, nil, err
		}
		out = append(out, describe(values))
	}
	return out, formats, rows.Err()
}

// describe writes each value with its Go type, so that a value decoded to another type or
// with another numeric scale shows as a difference.
func describe(values []any) string {
	parts := make([]string, len(values))
	for i, v := range values {
		switch x := v.(type) {
		case pgtype.Numeric:
			text, _ := x.MarshalJSON()
			parts[i] = fmt.Sprintf("numeric(%s exp=%d)", text, x.Exp)
		case float64: // NaN, ±Inf and -0 each spelled out
			parts[i] = "float64(" + strconv.FormatFloat(x, 'g', -1, 64) + ")"
		case time.Time:
			parts[i] = "time(" + x.UTC().Format(time.RFC3339Nano) + ")"
		default:
			parts[i] = fmt.Sprintf("%T(%#v)", v, v)
		}
	}
	return strings.Join(parts, " | ")
}

func count(ctx context.Context, conn *pgx.Conn) string {
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		return "error " + sqlstate(err)
	}
	return fmt.Sprint(n)
}

func countIn(ctx context.Context, tx pgx.Tx) string {
	var n int64
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		return "error " + sqlstate(err)
	}
	return fmt.Sprint(n)
}

func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	if err == nil {
		return "no error"
	}
	return "not a server error: " + err.Error()
}

// sourceRows gives the edge values first, then ordinary rows up to a few thousand; every
// column is NULL in some rows.
func sourceRows() [][]any {
	mustNumeric := func(s string) pgtype.Numeric {
		var n pgtype.Numeric
		if err := n.Scan(s); err != nil {
			panic(err)
		}
		return n
	}
	utc := time.UTC
	ints := []any{int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(-1), nil}
	bigs := []any{int64(math.MinInt64), int64(math.MaxInt64), int64(0), int64(1) << 40, nil}
	texts := []any{"", "plain", "quotes ' \" back\\slash \t tab\nnewline", "żółw 漢字 🐢",
		strings.Repeat("long ", 2000), nil}
	numerics := []any{mustNumeric("0"), mustNumeric("-0.000001"), mustNumeric("1.50"),
		mustNumeric("12345678901234567890.123456789012345678"), mustNumeric("1" + strings.Repeat("0", 100)),
		mustNumeric("-0.0000000000000000000999"), pgtype.Numeric{NaN: true, Valid: true}, mustNumeric("10000"),
		mustNumeric("0.0001"), nil}
	bools := []any{true, false, nil}
	times := []any{time.Date(2024, 1, 2, 3, 4, 5, 678901000, utc),
		time.Date(1999, 12, 31, 23, 59, 59, 999999000, utc),
		time.Date(2000, 1, 1, 0, 0, 0, 0, utc), time.Date(1, 1, 1, 0, 0, 0, 0, utc),
		time.Date(1969, 7, 20, 20, 17, 40, 0, time.FixedZone("", -5*3600)),
		time.Date(9999, 12, 31, 23, 59, 59, 0, utc),
		pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true},
		pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, nil}
	byteas := []any{[]byte{}, []byte{0, 1, 2, 255}, []byte("\\x00 not hex"), nil}
	uuids := []any{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", nil}
	jsons := []any{map[string]any{"a": 1, "b": []any{true, nil, "x"}}, []any{}, `"a string"`,
		json.RawMessage(`{"nested": {"k": [1.5, -2e3, "żółw"]}, "z": null}`), float64(3.25), nil}
	floats := []any{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), math.MaxFloat64,
		math.SmallestNonzeroFloat64, 0.1, -123.456e-7, nil}

	pick := func(values []any, i int) any { return values[i%len(values)] }
	var rows [][]any
	for i := 0; i < 3000; i++ {
		var u any = pick(uuids, i)
		if i >= len(uuids) && u != nil {
			u = fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*7919)
		}
		rows = append(rows, []any{i, pick(ints, i), pick(bigs, i+1), pick(texts, i),
			pick(numerics, i), pick(bools, i), pick(times, i), pick(byteas, i), u,
			pick(jsons, i), pick(floats, i)})
		if i >= 100 { // ordinary values after the edge values
			r := rows[i]
			r[1], r[2], r[3] = int32(i*37), int64(i)*1_000_003, fmt.Sprintf("row %d", i)
			r[4] = mustNumeric(fmt.Sprintf("%d.%02d", i, i%100))
			r[6] = time.Date(2020, 1, 1, 0, 0, 0, 0, utc).Add(time.Duration(i) * 1_234_567 * time.Microsecond)
			r[10] = float64(i) / 7
		}
	}
	return rows
}
