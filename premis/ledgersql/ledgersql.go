// Package ledgersql is the SQL ledger the SQLite and PostgreSQL backends
// share: the columns, the translation of a premis.Filter into a query, the
// members encoding, the reads (Store: events, counts, the walk, the head and
// read-model checks, the guard report) and the chaining of an append
// (Chain). A backend gives a Backend (how to run a query, decode a row and
// read its errors) and a Dialect (placeholders, times, substring tests),
// and keeps what truly differs: its DDL, its locking and round trips for
// an append, and its upgrades of older ledgers.
package ledgersql

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lazaret/lazaret/premis"
)

// Columns lists the event columns in the order both ledgers insert them
// and premis.ChainHash encodes them. Reads select ChainColumns first (see
// Select).
const Columns = ColumnsBeforeMembers + `, members, steps`

// NumColumns is the number of entries in Columns.
const NumColumns = 34

// NumColumnsBeforeMembers is the number of entries in ColumnsBeforeMembers.
const NumColumnsBeforeMembers = NumColumns - 2

// ChainColumns are the columns of the hash chain (see premis.ChainHash).
// Reads select them first, then Columns; Insert writes prev_hash and hash
// after Columns (seq is the database's).
const ChainColumns = `seq, prev_hash, hash`

// Select is the select list of every read: ChainColumns, then Columns.
const Select = ChainColumns + `, ` + Columns

// Dialect is what the two databases spell differently.
type Dialect struct {
	// Placeholder returns the n-th (1-based) parameter marker.
	Placeholder func(n int) string
	// Time turns a time into the value the database compares datetimes
	// with.
	Time func(time.Time) any
	// Contains renders "text column col contains the parameter marker
	// arg", case-sensitively.
	Contains func(col, arg string) string
	// BeforeMembers: the ledger was written before the members column (an
	// audit open, which adds nothing): it is read as empty, and no event
	// has members. Such a ledger is BeforeSteps too.
	BeforeMembers bool
	// BeforeSteps: likewise for the steps column (see premis.Step).
	BeforeSteps bool
	// Packed: the ledger stores events in the packed format (see Pack):
	// identifiers and digests compared through Value, times through Time
	// (which is PackTime).
	Packed bool
}

// Value is how the ledger d speaks to stores the value of an identifier
// or digest column (id, key, correlation_id, sha256, hash).
func (d Dialect) Value(v string) any {
	if d.Packed {
		return Pack(v)
	}
	return v
}

// text is the text of an identifier or digest column's value as the
// ledger d speaks to stores it.
func (d Dialect) text(v any) (string, error) {
	if d.Packed {
		return Unpack(v)
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", fmt.Errorf("a %T, want text", v)
}

// Select is the select list of the ledger d speaks to.
func (d Dialect) Select() string {
	switch {
	case d.Packed:
		return SelectPacked
	case d.BeforeMembers:
		return SelectBeforeMembers
	case d.BeforeSteps:
		return SelectBeforeSteps
	}
	return Select
}

// ColumnsBeforeMembers are the columns of a ledger written before the
// members column: Columns without it and steps (NumColumnsBeforeMembers of
// them).
const ColumnsBeforeMembers = `id, key, type, datetime, detail, outcome, note, class, code, message, byte_offset, page,
	segment, element, component, tag, destination, object_id, batch_id, correlation_id, kind, sha256, size,
	puid, path, attempt, retries, task_id, replay_of, agent, operator, envelope`

// SelectBeforeMembers is Select from a ledger written before the members
// column, which it reads as empty (an audit, which changes nothing).
const SelectBeforeMembers = ChainColumns + ", " + ColumnsBeforeMembers + ", '' AS members, '' AS steps"

// SelectBeforeSteps is Select from a ledger written before the steps
// column, which it reads as empty.
const SelectBeforeSteps = ChainColumns + ", " + ColumnsBeforeMembers + ", members, '' AS steps"

// SelectPacked is Select from a packed ledger (SQLite's, whose table is
// events), followed by the hash of the row before each (NULL for the
// first), whose prev_hash it stores the start of (see UnpackPrev).
const SelectPacked = Select + `, (SELECT p.hash FROM events p WHERE p.seq < events.seq ORDER BY p.seq DESC LIMIT 1)`

// ChainGenesis is premis.ChainGenesis.
const ChainGenesis = premis.ChainGenesis

// Query renders a SELECT of Select from table for f, oldest first.
func Query(table string, f premis.Filter, d Dialect) (string, []any) {
	return QueryLatest(table, "", f, d)
}

// QueryLatest is Query with the read model: when latest names the table of
// each correlation's latest event with a destination (correlation_id, seq,
// destination, batch_id), f.Latest selects through it — what is open now,
// not what ever was — instead of testing every event for a later one.
func QueryLatest(table, latest string, f premis.Filter, d Dialect) (string, []any) {
	from, args := fromWhere(table, latest, f, d, nil)
	q := "SELECT " + d.Select() + from + " ORDER BY seq"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	return q, args
}

// CountLatest renders a SELECT COUNT(*) of the events QueryLatest would
// return for f without its Limit and AfterSeq: the database counts them,
// so a listing's total costs an index scan, not the rows read back.
func CountLatest(table, latest string, f premis.Filter, d Dialect) (string, []any) {
	f.Limit, f.AfterSeq = 0, 0
	var args []any
	arg := argsIn(&args, d)
	count := "COUNT(*)"
	if f.StepsMayMatch() && !d.BeforeSteps {
		// A row counts once for itself when it matches, and once more for
		// each of its steps that does: each needle is found in the steps
		// text as often as steps match it.
		if row := rowTypeOutcome(f, arg); row == "" {
			open := stepOpen
			if d.Packed {
				open = stepSep
			}
			count += " + " + occurrences("'"+open+"'", len(open))
		} else {
			count = "COALESCE(SUM(CASE WHEN " + row + " THEN 1 ELSE 0 END), 0)"
			for _, n := range stepNeedles(f, d.Packed) {
				count += " + " + occurrences(arg(n), utf8.RuneCountInString(n))
			}
		}
	}
	if f.Latest && latest != "" && latestAnswers(f) && !f.HasMembers && count == "COUNT(*)" {
		// The read model alone answers: one row an item, indexed by
		// destination and batch, without a read of the events it points
		// at (a count of open failures is what every listing's page asks).
		return "SELECT COUNT(*) FROM " + latestWhere(latest, f, d, arg), args
	}
	from, args := fromWhere(table, latest, f, d, args)
	return "SELECT " + count + from, args
}

// occurrences is the SQL sum, over the rows counted, of how many times the
// text needle (an SQL expression, n characters long) occurs in steps.
func occurrences(needle string, n int) string {
	return fmt.Sprintf("COALESCE(SUM((length(steps) - length(replace(steps, %s, ''))) / %d), 0)", needle, n)
}

// stepOpen opens each step in the steps text, and occurs nowhere else in
// it (a quote inside a JSON string is escaped).
const stepOpen = `{"type":`

// stepSep parts each step's type from its outcome in the packed steps
// text (see EncodeStepsPacked), and occurs nowhere else in it.
const stepSep = `","`

// rowTypeOutcome renders f's type and outcome tests of a row's own
// columns ("" when f has none).
func rowTypeOutcome(f premis.Filter, arg func(any) string) string {
	var conds []string
	if f.Outcome != "" {
		conds = append(conds, "outcome = "+arg(string(f.Outcome)))
	}
	if len(f.Types) > 0 {
		conds = append(conds, inList("type", f.Types, arg))
	}
	return strings.Join(conds, " AND ")
}

// argsIn returns the arg of a query: it adds a value to *args and renders
// its placeholder in d.
func argsIn(args *[]any, d Dialect) func(any) string {
	return func(v any) string {
		*args = append(*args, v)
		return d.Placeholder(len(*args))
	}
}

// inList renders "col IN (...)" of values, each an argument.
func inList[T ~string](col string, values []T, arg func(any) string) string {
	ph := make([]string, len(values))
	for i, v := range values {
		ph[i] = arg(string(v))
	}
	return col + " IN (" + strings.Join(ph, ", ") + ")"
}

// stepNeedles are what the steps text holds where a step f selects by its
// type and outcome begins (or, for an outcome alone, is): one per type.
// packed: the text is a packed ledger's (EncodeStepsPacked).
func stepNeedles(f premis.Filter, packed bool) []string {
	if packed {
		return pairNeedles(f)
	}
	outcome := ""
	if f.Outcome != "" {
		q, _ := json.Marshal(string(f.Outcome))
		outcome = `"outcome":` + string(q)
	}
	if len(f.Types) == 0 {
		return []string{outcome}
	}
	out := make([]string, len(f.Types))
	for i, t := range f.Types {
		q, _ := json.Marshal(string(t))
		out[i] = stepOpen + string(q) + ","
		if outcome != "" {
			out[i] += outcome
		}
	}
	return out
}

// pairNeedles are stepNeedles in the packed steps text: a pair ["type",
// "outcome"] whole, its opening ["type", or its closing ,"outcome"].
func pairNeedles(f premis.Filter) []string {
	var outcome string
	if f.Outcome != "" {
		q, _ := json.Marshal(string(f.Outcome))
		outcome = string(q)
	}
	if len(f.Types) == 0 {
		return []string{"," + outcome + "]"}
	}
	out := make([]string, len(f.Types))
	for i, t := range f.Types {
		q, _ := json.Marshal(string(t))
		out[i] = "[" + string(q) + ","
		if outcome != "" {
			out[i] += outcome + "]"
		}
	}
	return out
}

// fromWhere is the " FROM table WHERE ..." of QueryLatest and CountLatest,
// and its arguments, appended to args.
func fromWhere(table, latest string, f premis.Filter, d Dialect, args []any) (string, []any) {
	var where []string
	arg := argsIn(&args, d)
	eq := func(col, v string) {
		if v != "" {
			where = append(where, col+" = "+arg(v))
		}
	}
	packed := func(col, v string) { // an identifier or digest column
		if v != "" {
			where = append(where, col+" = "+arg(d.Value(v)))
		}
	}
	if parent, _, ok := strings.Cut(f.ObjectID, "#"); ok && mayHoldMembers(f) && !d.BeforeMembers {
		// A message: its own events, or its interchange's events that
		// hold it among their members (found through the interchange's
		// object, then in the members text, where a member's entry opens
		// with its quoted object id).
		where = append(where, "(object_id = "+arg(f.ObjectID)+" OR (object_id = "+arg(parent)+" AND members <> '' AND "+
			d.Contains("members", arg(memberNeedle(f.ObjectID)))+"))")
	} else {
		eq("object_id", f.ObjectID)
	}
	switch {
	case f.HasMembers && d.BeforeMembers:
		where = append(where, "1 = 0")
	case f.HasMembers:
		where = append(where, "members <> ''")
	}
	eq("batch_id", f.BatchID)
	packed("correlation_id", f.CorrelationID)
	eq("task_id", f.TaskID)
	packed("key", f.Key)
	eq("kind", f.Kind)
	eq("code", f.Code)
	if row := rowTypeOutcome(f, arg); row != "" {
		if f.StepsMayMatch() && !d.BeforeSteps {
			// Or a step of the row: its type and outcome are in the
			// steps text, the rest are the row's.
			var in []string
			for _, n := range stepNeedles(f, d.Packed) {
				in = append(in, d.Contains("steps", arg(n)))
			}
			row = "(" + row + " OR (steps <> '' AND (" + strings.Join(in, " OR ") + ")))"
		}
		where = append(where, row)
	}
	eq("class", string(f.Class))
	eq("destination", string(f.Destination))
	if f.AfterSeq > 0 {
		where = append(where, "seq > "+arg(f.AfterSeq))
	}
	if !f.Since.IsZero() {
		where = append(where, "datetime >= "+arg(d.Time(f.Since.UTC())))
	}
	if !f.Until.IsZero() {
		where = append(where, "datetime < "+arg(d.Time(f.Until.UTC())))
	}
	if len(f.Destinations) > 0 {
		where = append(where, inList("destination", f.Destinations, arg))
	}
	switch {
	case f.Latest && latest != "" && f.Limit > 0 && latestAnswers(f):
		// The read model answers every filter: each destination's first
		// Limit items through its (destination, seq) index, so a listing
		// costs its page, not the open set.
		where = append(where, "seq IN ("+latestPage(latest, f, d, arg)+")")
	case f.Latest && latest != "":
		// The read model narrows first (by destination or batch, its
		// indexes); the events' own columns filter the rest.
		where = append(where, "seq IN (SELECT seq FROM "+latestWhere(latest, f, d, arg)+")")
	case f.Latest:
		where = append(where, "destination <> ''", "NOT EXISTS (SELECT 1 FROM "+table+" later WHERE later.correlation_id = "+table+
			".correlation_id AND later.seq > "+table+".seq AND later.destination <> '')")
	}
	q := " FROM " + table
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q, args
}

// latestWhere is the read model table with the WHERE of f's columns it
// holds (destination, batch, correlation).
func latestWhere(latest string, f premis.Filter, d Dialect, arg func(any) string) string {
	var in []string
	if f.Destination != "" {
		in = append(in, "destination = "+arg(string(f.Destination)))
	}
	if len(f.Destinations) > 0 {
		in = append(in, inList("destination", f.Destinations, arg))
	}
	if f.BatchID != "" {
		in = append(in, "batch_id = "+arg(f.BatchID))
	}
	if f.CorrelationID != "" {
		in = append(in, "correlation_id = "+arg(d.Value(f.CorrelationID)))
	}
	if len(in) == 0 {
		return latest
	}
	return latest + " WHERE " + strings.Join(in, " AND ")
}

// mayHoldMembers says whether an event with members (which has no
// destination, class or code, and whose key, task and correlation are its
// interchange's) can match f: else a lookup by a message's object id needs
// not search the members of its interchange's events.
func mayHoldMembers(f premis.Filter) bool {
	return f.Key == "" && f.TaskID == "" && !f.Latest && f.Destination == "" && len(f.Destinations) == 0 && f.Class == "" && f.Code == "" &&
		f.Outcome != premis.Failure
}

// latestAnswers says whether the read model alone answers f: no filter on
// a column it does not hold.
func latestAnswers(f premis.Filter) bool {
	return f.ObjectID == "" && f.TaskID == "" && f.Key == "" && f.Kind == "" && f.Code == "" && f.Outcome == "" && f.Class == "" &&
		len(f.Types) == 0 && f.Since.IsZero() && f.Until.IsZero()
}

// latestPage selects the seqs of the first f.Limit latest outcomes of each
// destination f names (or of all), after f.AfterSeq, in f's batch or
// correlation: one bounded index range per destination.
func latestPage(latest string, f premis.Filter, d Dialect, arg func(any) string) string {
	dests := f.Destinations
	if f.Destination != "" {
		dests = []premis.Destination{f.Destination}
	}
	n := 0
	branch := func(dest *premis.Destination) string {
		n++
		var w []string
		if dest != nil {
			w = append(w, "destination = "+arg(string(*dest)))
		}
		if f.BatchID != "" {
			w = append(w, "batch_id = "+arg(f.BatchID))
		}
		if f.CorrelationID != "" {
			w = append(w, "correlation_id = "+arg(d.Value(f.CorrelationID)))
		}
		if f.AfterSeq > 0 {
			w = append(w, "seq > "+arg(f.AfterSeq))
		}
		q := "SELECT seq FROM " + latest
		if len(w) > 0 {
			q += " WHERE " + strings.Join(w, " AND ")
		}
		return fmt.Sprintf("SELECT seq FROM (%s ORDER BY seq LIMIT %d) AS page%d", q, f.Limit, n) // PostgreSQL 15 wants the alias
	}
	if len(dests) == 0 {
		return branch(nil)
	}
	parts := make([]string, len(dests))
	for i := range dests {
		parts[i] = branch(&dests[i])
	}
	return strings.Join(parts, " UNION ALL ")
}

// memberNeedle is what the members text holds where the member with that
// object id begins (see EncodeMembers).
func memberNeedle(objectID string) string {
	q, _ := json.Marshal(objectID)
	return "[" + string(q) + ","
}

// EncodeMembers is how the members column stores an event's members: ""
// for none, else a JSON array holding for each member the array
// [object_id, number, offset, type] (some 40 bytes a message, where the
// field names would double it), at most MaxMembersText bytes.
func EncodeMembers(ms []premis.Member) (string, error) {
	if len(ms) == 0 {
		return "", nil
	}
	rows := make([][4]any, len(ms))
	for i, m := range ms {
		rows[i] = [4]any{m.ObjectID, m.Number, m.Offset, m.Type}
	}
	b, err := json.Marshal(rows)
	if err == nil && len(b) > MaxMembersText {
		err = fmt.Errorf("members: %d bytes, more than %d", len(b), MaxMembersText)
	}
	return string(b), err
}

// MaxMembersText bounds the members column of one event.
const MaxMembersText = 8 << 20

// DecodeMembers reads what EncodeMembers wrote, byte for byte: the chain
// hashes the members, not their text, and a lookup searches the text, so a
// text that decodes to the same members but is written otherwise (escaped
// letters, spaces, an extra field) would hide a member from lookups while
// the chain still verifies. Anything else is an error, not a guess.
func DecodeMembers(s string) ([]premis.Member, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxMembersText {
		return nil, fmt.Errorf("members: %d bytes, more than %d", len(s), MaxMembersText)
	}
	var rows [][4]json.RawMessage
	if err := json.Unmarshal([]byte(s), &rows); err != nil {
		return nil, fmt.Errorf("members: %w", err)
	}
	if len(rows) == 0 || len(rows) > premis.MaxMembers {
		return nil, fmt.Errorf("members: %d entries, want 1 to %d", len(rows), premis.MaxMembers)
	}
	ms := make([]premis.Member, len(rows))
	for i, r := range rows {
		m := &ms[i]
		for j, dst := range []any{&m.ObjectID, &m.Number, &m.Offset, &m.Type} {
			if len(r[j]) == 0 {
				return nil, fmt.Errorf("members: entry %d has no field %d", i+1, j+1)
			}
			if err := json.Unmarshal(r[j], dst); err != nil {
				return nil, fmt.Errorf("members: entry %d, field %d: %w", i+1, j+1, err)
			}
		}
		if m.ObjectID == "" {
			return nil, fmt.Errorf("members: entry %d has no object id", i+1)
		}
	}
	if again, err := EncodeMembers(ms); err != nil || again != s {
		return nil, errors.New("members: not written as the ledger writes them (the text was changed past the ledger)")
	}
	return ms, nil
}

// Insert renders the idempotent INSERT of one event into table: the
// NumColumns values of Columns, then prev_hash and hash; a key stored
// already inserts nothing.
func Insert(table string, placeholder func(n int) string) string {
	return InsertRows(table, 1, placeholder) + " ON CONFLICT DO NOTHING"
}

// InsertRows renders the INSERT of rows events known to be new, in one
// statement, their arguments one event after another: a key stored already
// is an error, which aborts the transaction.
func InsertRows(table string, rows int, placeholder func(n int) string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + Columns + ", prev_hash, hash) VALUES ")
	ph := make([]string, NumColumns+2)
	for r := range rows {
		for i := range ph {
			ph[i] = placeholder(r*len(ph) + i + 1)
		}
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + strings.Join(ph, ",") + ")")
	}
	return b.String()
}

// ReadModelCheck renders the query that compares the read model (latest)
// with the events (table): how many items' row is not their latest event
// with a destination, and how many rows more than such items it holds.
func ReadModelCheck(table, latest string) string {
	return `SELECT
	(SELECT count(*) FROM (SELECT correlation_id, max(seq) AS seq FROM ` + table + ` WHERE destination <> '' GROUP BY correlation_id) x
		JOIN ` + table + ` e ON e.seq = x.seq
		LEFT JOIN ` + latest + ` l ON l.correlation_id = x.correlation_id
		WHERE l.seq IS NULL OR l.seq <> x.seq OR l.destination <> e.destination OR l.batch_id <> e.batch_id),
	(SELECT count(*) FROM ` + latest + `) - (SELECT count(DISTINCT correlation_id) FROM ` + table + ` WHERE destination <> '')`
}

// CountByDestination is the count of f's latest outcomes from the counts
// table, when f asks for nothing but destinations (the total of every
// listing of open failures); ok is false for any other filter, which
// CountLatest answers.
func CountByDestination(counts string, f premis.Filter, d Dialect) (q string, args []any, ok bool) {
	g := f
	g.Destination, g.Destinations, g.Limit, g.AfterSeq = "", nil, 0, 0
	if !f.Latest || counts == "" || !reflect.DeepEqual(g, premis.Filter{Latest: true}) {
		return "", nil, false
	}
	arg := argsIn(&args, d)
	q = "SELECT COALESCE(SUM(n), 0) FROM " + counts
	switch {
	case f.Destination != "" && len(f.Destinations) > 0:
		return "", nil, false
	case f.Destination != "":
		q += " WHERE destination = " + arg(string(f.Destination))
	case len(f.Destinations) > 0:
		q += " WHERE " + inList("destination", f.Destinations, arg)
	}
	return q, args, true
}

// CountsCheck counts the destinations whose row in the counts table does
// not say how many items the read model holds there (one missing counts).
func CountsCheck(latest, counts string) string {
	return `SELECT
	(SELECT count(*) FROM ` + counts + ` c WHERE c.n <> (SELECT count(*) FROM ` + latest + ` l WHERE l.destination = c.destination)) +
	(SELECT count(DISTINCT destination) FROM ` + latest + ` WHERE destination NOT IN (SELECT destination FROM ` + counts + `))`
}

// ReadModelProblem says what ReadModelCheck's counts mean, or "" when the
// read model agrees with the events.
func ReadModelProblem(wrong, extra int64) string {
	switch {
	case wrong > 0:
		return fmt.Sprintf("%d items' latest outcome in the read model is not their latest event (listings would show them wrongly)", wrong)
	case extra != 0:
		return fmt.Sprintf("the read model holds %d rows more than the items the events name", extra)
	}
	return ""
}
