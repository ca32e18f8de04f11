// histcheck: checks histories of skiplist_map operations against the promise of
// a consistency mode (docs/skiplist_map.md, "Consistency modes").
//
//	histcheck --mode total_order|sequential|none|linearizable [--expect-reject] FILE...
//
// Each FILE is one history: JSON lines written by
// tests/skiplist_map/history_workload.hpp (client, seq = issue number, call and
// return times, round = poll round of completion, op, key, value, out; "final"
// marks the reads after the closing flush), or by apps/serve/tests/history.py
// (a Redis register per key: ops get, set, incr, del; see below).
//
//   - total_order: an exact search for one linearization that keeps every
//     client's issue order (a range is one snapshot); the order it finds is
//     checked again on its own (verifyOrder).  Where the search gives up
//     ("unknown"), Porcupine checks plain linearizability: per key when the
//     history has only point operations (linearizability is local), else as one
//     whole-map history.  And the per-key program-order check below.
//   - sequential: (1) replies complete in issue order: for each client, an
//     operation issued later is never seen complete in an earlier poll round;
//     (2) per key, a legal order exists that keeps every client's issue order
//     (sequential consistency per key) with the final reads last.  Exact search
//     over (position in each client's sequence, value of the key).  A range or
//     match counts as one read of every key it covers (pointReads).
//   - none: every operation atomic: per key linearizable (Porcupine), which with
//     the final reads after the flush also says the final state is one the
//     operations could have produced; a range or match reads each key it covers
//     at one moment between its call and return (pointReads).
//   - linearizable: per key linearizable (Porcupine), for histories of clients
//     with one command in flight each (apps/serve: docs/serve.md promises that
//     single-key commands are linearizable).  The Redis operations: get (out =
//     the value, -1 for nil), set (value; out 0 = OK), incr (value = the
//     increment; out = the new value, an absent key counting as 0), del (out =
//     keys removed, 0 or 1).
//
// Ranges carry "hi", "limit" (0: all) and "desc"; op "match" is the pattern
// [key,hi] on a one-dimensional key, checked as the same range.  Ops "count"
// and "erase_range" (issue 49) carry "hi" and out = the number of entries in
// [key, hi] (erase_range: erased): in total_order a read and a write of the
// whole interval at one moment; in sequential and none (pointReads) an
// erase_range is an erase of every key of its interval, each at one moment
// between its call and return (its count cannot be split over the keys and is
// only checked to be at most the interval's known keys), and a count is
// checked the same way.  Op "reduce" is skiplist_map's reduce(key, value) with
// std::plus (out 1: folded into a present key, 0: stored new).
//
// Exit status: 0 if every history passes (with --expect-reject: if at least
// one is rejected), 1 otherwise, 2 on bad input.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type event struct {
	Client int             `json:"client"`
	Seq    int64           `json:"seq"`
	Call   int64           `json:"call"`
	Return int64           `json:"return"`
	Round  int64           `json:"round"`
	Op     string          `json:"op"`
	Key    int64           `json:"key"`
	Hi     int64           `json:"hi"`
	Limit  int64           `json:"limit"`
	Desc   bool            `json:"desc"`
	Value  uint64          `json:"value"`
	Final  bool            `json:"final"`
	Out    json.RawMessage `json:"out"`
}

// The sequential specification: a map from key to value.
type input struct {
	op    string
	key   int64
	hi    int64
	value uint64
	limit int64 // ranges: at most this many entries (0: all)
	desc  bool  // ranges: largest key first (with limit: the last ones)
}

// isRange: a range or a match (a one-dimensional pattern [lo,hi] is the
// same query by another path).
func isRange(op string) bool { return op == "range" || op == "match" }

// isInterval: count and erase_range, whose result is a number of entries of [key, hi].
func isInterval(op string) bool { return op == "count" || op == "erase_range" }

func countIn(s state, lo, hi int64) int64 {
	a, b := s.bounds(lo, hi)
	return int64(b - a)
}

// Point results are numbers (see history_workload.hpp); a range's is its
// entries in canonical text.
type output struct {
	number int64
	text   string
}

// A state of the map: its entries in key order.  Porcupine and the searches
// below keep the states they have seen, so a state is never changed in place:
// every write makes a new one (histories name tens of keys, so a copy is cheap,
// and lookups, ranges, equality and hashing need no sorting or formatting).
type entry struct {
	key   int64
	value uint64
}

type state []entry

// find: where key is or would be inserted, and whether it is there.
func (s state) find(key int64) (int, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].key >= key })
	return i, i < len(s) && s[i].key == key
}

func (s state) get(key int64) (uint64, bool) {
	if i, ok := s.find(key); ok {
		return s[i].value, true
	}
	return 0, false
}

// bounds: the entries with lo <= key <= hi are s[a:b].
func (s state) bounds(lo, hi int64) (int, int) {
	a := sort.Search(len(s), func(i int) bool { return s[i].key >= lo })
	b := sort.Search(len(s), func(i int) bool { return s[i].key > hi })
	if b < a {
		b = a
	}
	return a, b
}

func step(s state, in input, out output) (bool, state) {
	present := false
	var current uint64
	if !isRange(in.op) {
		current, present = s.get(in.key)
	}
	switch in.op {
	case "insert":
		want := int64(0)
		if present {
			want = 1
		}
		if out.number != want {
			return false, s
		}
		return true, with(s, in.key, in.value)
	case "reduce":
		// skiplist_map reduce with std::plus: out 1 if the key was there (folded), 0 if stored new.
		if present {
			return out.number == 1, with(s, in.key, current+in.value)
		}
		return out.number == 0, with(s, in.key, in.value)
	case "insert_if_absent":
		if present {
			return out.number == 0, s
		}
		if out.number != 1 {
			return false, s
		}
		return true, with(s, in.key, in.value)
	case "find":
		if present {
			return out.number == int64(current), s
		}
		return out.number == -1, s
	case "erase":
		if present {
			if out.number != 1 {
				return false, s
			}
			return true, without(s, in.key)
		}
		return out.number == 0, s
	case "range", "match":
		return out.text == rangeText(s, in), s
	case "count":
		return out.number == countIn(s, in.key, in.hi), s
	case "erase_range":
		if out.number != countIn(s, in.key, in.hi) {
			return false, s
		}
		a, b := s.bounds(in.key, in.hi)
		next := make(state, 0, len(s)-(b-a))
		next = append(append(next, s[:a]...), s[b:]...)
		return true, next
	case "erase_any":
		// One key of an erase_range (pointReads): erased, whatever was there.
		if present {
			return true, without(s, in.key)
		}
		return true, s
	// The Redis register (apps/serve/tests/history.py).
	case "get":
		if present {
			return out.number == int64(current), s
		}
		return out.number == -1, s
	case "set":
		return out.number == 0, with(s, in.key, in.value)
	case "incr":
		next := int64(current) + int64(in.value)
		if out.number != next {
			return false, s
		}
		return true, with(s, in.key, uint64(next))
	case "del":
		if present {
			if out.number != 1 {
				return false, s
			}
			return true, without(s, in.key)
		}
		return out.number == 0, s
	}
	return false, s
}

func with(s state, key int64, value uint64) state {
	i, present := s.find(key)
	if present {
		next := make(state, len(s))
		copy(next, s)
		next[i].value = value
		return next
	}
	next := make(state, len(s)+1)
	copy(next, s[:i])
	next[i] = entry{key, value}
	copy(next[i+1:], s[i:])
	return next
}

func without(s state, key int64) state {
	i, present := s.find(key)
	if !present {
		return s
	}
	next := make(state, len(s)-1)
	copy(next, s[:i])
	copy(next[i:], s[i+1:])
	return next
}

// rangeText: what range(lo, hi, {limit, descending}) returns from s, in the
// order returned.
func rangeText(s state, in input) string {
	a, b := s.bounds(in.key, in.hi)
	part := s[a:b]
	n := len(part)
	if in.limit > 0 && int64(n) > in.limit {
		n = int(in.limit)
	}
	text := make([]byte, 0, 24*n)
	for j := 0; j < n; j++ {
		e := part[j]
		if in.desc {
			e = part[len(part)-1-j]
		}
		text = appendEntry(text, e)
	}
	return string(text)
}

// appendEntry: "key:value;", an entry as range results and memo keys spell it.
func appendEntry(text []byte, e entry) []byte {
	text = strconv.AppendInt(text, e.key, 10)
	text = append(text, ':')
	text = strconv.AppendUint(text, e.value, 10)
	return append(text, ';')
}

func equalStates(a, b state) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hashState: FNV-1a over the entries' bytes.
func hashState(s state) uint64 {
	h := uint64(14695981039346656037)
	mix := func(x uint64) {
		for i := 0; i < 8; i++ {
			h ^= x & 0xff
			h *= 1099511628211
			x >>= 8
		}
	}
	for _, e := range s {
		mix(uint64(e.key))
		mix(e.value)
	}
	return h
}

// memoKey: a search position (each client's placed count) and the map, as a
// map key for the searches' memo of explored states.
func memoKey(position []int, s state) string {
	key := make([]byte, 0, 4*len(position)+24*len(s))
	for _, p := range position {
		key = strconv.AppendInt(key, int64(p), 10)
		key = append(key, ',')
	}
	key = append(key, '|')
	for _, e := range s {
		key = appendEntry(key, e)
	}
	return string(key)
}

var mapModel = porcupine.Model{
	Init: func() interface{} { return state{} },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		ok, next := step(s.(state), in.(input), out.(output))
		return ok, next
	},
	Equal: func(a, b interface{}) bool { return equalStates(a.(state), b.(state)) },
	Hash:  func(s interface{}) uint64 { return hashState(s.(state)) },
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		if isRange(i.op) {
			return fmt.Sprintf("%s(%d, %d, limit %d, desc %v) -> %s", i.op, i.key, i.hi, i.limit, i.desc, o.text)
		}
		return fmt.Sprintf("%s(%d, %d) -> %d", i.op, i.key, i.value, o.number)
	},
}

func perKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[int64][]porcupine.Operation{}
	var keys []int64
	for _, op := range history {
		k := op.Input.(input).key
		if _, seen := byKey[k]; !seen {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}

func parseOutput(e event) (output, error) {
	if isRange(e.Op) {
		var pairs [][2]json.Number
		if err := json.Unmarshal(e.Out, &pairs); err != nil {
			return output{}, err
		}
		var b strings.Builder
		for _, p := range pairs {
			fmt.Fprintf(&b, "%s:%s;", p[0].String(), p[1].String())
		}
		return output{text: b.String()}, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(e.Out)), 10, 64)
	if err != nil {
		// find returns an unsigned value that may not fit an int64
		u, err2 := strconv.ParseUint(strings.TrimSpace(string(e.Out)), 10, 64)
		if err2 != nil {
			return output{}, err
		}
		n = int64(u)
	}
	return output{number: n}, nil
}

func load(path string) ([]event, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var events []event
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<26)
	line := 0
	for scanner.Scan() {
		line++
		text := strings.TrimSpace(scanner.Text())
		if text == "" {
			continue
		}
		var e event
		decoder := json.NewDecoder(strings.NewReader(text))
		decoder.UseNumber()
		if err := decoder.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
		switch e.Op {
		case "insert", "insert_if_absent", "reduce", "find", "erase", "range", "match", "count", "erase_range", "get",
			"set", "incr", "del":
		default:
			return nil, fmt.Errorf("%s:%d: unknown operation %q", path, line, e.Op)
		}
		if e.Return < e.Call {
			return nil, fmt.Errorf("%s:%d: returns before it is called", path, line)
		}
		events = append(events, e)
	}
	return events, scanner.Err()
}

func inputOf(e event) input { return input{e.Op, e.Key, e.Hi, e.Value, e.Limit, e.Desc} }

func operations(events []event) ([]porcupine.Operation, bool, error) {
	ops := make([]porcupine.Operation, 0, len(events))
	ranges := false
	for _, e := range events {
		out, err := parseOutput(e)
		if err != nil {
			return nil, false, fmt.Errorf("client %d seq %d: bad result %s: %v", e.Client, e.Seq, string(e.Out), err)
		}
		ranges = ranges || isRange(e.Op) || isInterval(e.Op)
		ops = append(ops, porcupine.Operation{ClientId: e.Client, Input: inputOf(e),
			Call: e.Call, Output: out, Return: e.Return})
	}
	return ops, ranges, nil
}

// linearizable: Porcupine, per key unless the history has ranges.
func linearizable(events []event, timeout time.Duration) (string, bool) {
	ops, ranges, err := operations(events)
	if err != nil {
		return err.Error(), false
	}
	model := mapModel
	if !ranges {
		model.Partition = perKey
	}
	switch porcupine.CheckOperationsTimeout(model, ops, timeout) {
	case porcupine.Illegal:
		if ranges {
			return "not linearizable (whole-map history with ranges, Porcupine)", false
		}
		return "not linearizable (a key's history, Porcupine)", false
	case porcupine.Unknown:
		unknown++
	}
	return "", true
}

var unknown int

// pointReads: the history with every range (and match) replaced by one find
// per key it read, at the range's place in its caller's issue order and with
// its call and return times.  What sequential and none promise a range is
// exactly that: each key it covers is read at its node at one moment between
// the call and the return, after this caller's earlier operations on that key
// and before its later ones (sequential), not one snapshot of the whole
// interval (only total_order gives that).  The keys read: every key of the
// interval that any operation names or any range returned; with a limit that
// cut the result, only up to the last key returned (from it, descending).  A
// result outside its interval, out of order or longer than its limit is
// rejected here.
func pointReads(events []event) ([]event, string, bool) {
	known := map[int64]bool{}
	results := make([][][2]json.Number, len(events))
	for i, e := range events {
		if !isRange(e.Op) {
			known[e.Key] = true
			continue
		}
		if err := json.Unmarshal(e.Out, &results[i]); err != nil {
			return nil, fmt.Sprintf("client %d seq %d: bad range result %s", e.Client, e.Seq, string(e.Out)), false
		}
		for _, pair := range results[i] {
			if k, err := pair[0].Int64(); err == nil {
				known[k] = true
			}
		}
	}
	out := make([]event, 0, len(events))
	for i, e := range events {
		if isInterval(e.Op) {
			var keys []int64
			for k := range known {
				if k >= e.Key && k <= e.Hi {
					keys = append(keys, k)
				}
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(e.Out)), 10, 64)
			if err != nil || n < 0 || n > int64(len(keys)) {
				return nil, fmt.Sprintf("client %d seq %d: %s(%d, %d) -> %s: more entries than the interval's keys",
					e.Client, e.Seq, e.Op, e.Key, e.Hi, string(e.Out)), false
			}
			if e.Op == "count" {
				continue
			}
			sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
			for _, k := range keys {
				erase := e
				erase.Op, erase.Key, erase.Hi, erase.Value, erase.Final, erase.Out = "erase_any", k, 0, 0, false,
					json.RawMessage("0")
				out = append(out, erase)
			}
			continue
		}
		if !isRange(e.Op) {
			out = append(out, e)
			continue
		}
		describe := fmt.Sprintf("client %d seq %d: %s(%d, %d, limit %d, desc %v) -> %s", e.Client, e.Seq, e.Op, e.Key,
			e.Hi, e.Limit, e.Desc, string(e.Out))
		got := map[int64]string{}
		var order []int64
		for _, pair := range results[i] {
			k, err := pair[0].Int64()
			if err != nil {
				return nil, describe + ": bad key", false
			}
			if k < e.Key || k > e.Hi {
				return nil, describe + ": a key outside the interval", false
			}
			if len(order) > 0 && ((!e.Desc && k <= order[len(order)-1]) || (e.Desc && k >= order[len(order)-1])) {
				return nil, describe + ": keys out of order", false
			}
			order = append(order, k)
			got[k] = pair[1].String()
		}
		lo, hi := e.Key, e.Hi
		if e.Limit > 0 && int64(len(order)) > e.Limit {
			return nil, describe + ": more entries than the limit", false
		}
		if e.Limit > 0 && int64(len(order)) == e.Limit {
			if e.Desc {
				lo = order[len(order)-1]
			} else {
				hi = order[len(order)-1]
			}
		}
		var keys []int64
		for k := range known {
			if k >= lo && k <= hi {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
		for _, k := range keys {
			read := e
			read.Op, read.Key, read.Hi, read.Limit, read.Desc, read.Value, read.Final = "find", k, 0, 0, false, 0, false
			if v, ok := got[k]; ok {
				read.Out = json.RawMessage(v)
			} else {
				read.Out = json.RawMessage("-1")
			}
			out = append(out, read)
		}
	}
	return out, "", true
}

// perKeyReads: check applied to pointReads(events).
func perKeyReads(check func([]event) (string, bool)) func([]event) (string, bool) {
	return func(events []event) (string, bool) {
		reads, why, ok := pointReads(events)
		if !ok {
			return why, false
		}
		return check(reads)
	}
}

// replyOrder: per client, issue order never completes in a later round than a
// later-issued operation (the hold-back queue).
func replyOrder(events []event) (string, bool) {
	byClient := map[int][]event{}
	for _, e := range events {
		if !e.Final {
			byClient[e.Client] = append(byClient[e.Client], e)
		}
	}
	for client, list := range byClient {
		sort.Slice(list, func(i, j int) bool { return list[i].Seq < list[j].Seq })
		for i := 1; i < len(list); i++ {
			if list[i].Round < list[i-1].Round {
				return fmt.Sprintf("client %d: operation %d (%s %d) completed in round %d, before operation %d (%s %d, round %d)",
					client, list[i].Seq, list[i].Op, list[i].Key, list[i].Round, list[i-1].Seq, list[i-1].Op,
					list[i-1].Key, list[i-1].Round), false
			}
		}
	}
	return "", true
}

// programOrderPerKey: for every key, a serial order of its point operations
// exists that keeps each client's issue order, where every result matches the
// register it reads, and the final reads come after everything else.  Exact:
// a depth-first search over (how many of each client's operations are placed,
// the key's value), remembering the states already explored.
// A recorded operation with its parsed result.
type recorded struct {
	e   event
	out output
}

// clientSequences: the events of each client in issue order, clients by id.
func clientSequences(events []event) ([][]recorded, error) {
	byClient := map[int][]recorded{}
	for _, e := range events {
		out, err := parseOutput(e)
		if err != nil {
			return nil, err
		}
		byClient[e.Client] = append(byClient[e.Client], recorded{e, out})
	}
	var ids []int
	for c, list := range byClient {
		sort.Slice(list, func(i, j int) bool { return list[i].e.Seq < list[j].e.Seq })
		ids = append(ids, c)
	}
	sort.Ints(ids)
	lists := make([][]recorded, len(ids))
	for i, c := range ids {
		lists[i] = byClient[c]
	}
	return lists, nil
}

// exhausted: every client's sequence is placed.
func exhausted(position []int, lists [][]recorded) bool {
	for i := range lists {
		if position[i] < len(lists[i]) {
			return false
		}
	}
	return true
}

func programOrderPerKey(events []event) (string, bool) {
	byKey := map[int64][]event{}
	for _, e := range events {
		if !isRange(e.Op) {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	var keys []int64
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, key := range keys {
		lists, err := clientSequences(byKey[key])
		if err != nil {
			return err.Error(), false
		}
		nonFinal := 0
		for _, list := range lists {
			for _, o := range list {
				if !o.e.Final {
					nonFinal++
				}
			}
		}
		position := make([]int, len(lists))
		seen := map[string]bool{}
		var search func(placed int, s state) bool
		search = func(placed int, s state) bool {
			if exhausted(position, lists) {
				return true
			}
			memo := memoKey(position, s)
			if seen[memo] {
				return false
			}
			seen[memo] = true
			for i := range lists {
				if position[i] >= len(lists[i]) {
					continue
				}
				next := lists[i][position[i]]
				if next.e.Final && placed < nonFinal {
					continue // the final reads follow the flush, after everything
				}
				ok, after := step(s, inputOf(next.e), next.out)
				if !ok {
					continue
				}
				position[i]++
				advanced := placed
				if !next.e.Final {
					advanced++
				}
				if search(advanced, after) {
					return true
				}
				position[i]--
			}
			return false
		}
		if !search(0, state{}) {
			return fmt.Sprintf("key %d: no order of its %d operations keeps every client's issue order", key,
				func() int {
					n := 0
					for _, l := range lists {
						n += len(l)
					}
					return n
				}()), false
		}
	}
	return "", true
}

// orderedLinearizable: one serial order of the whole history (ranges
// included) in which every result matches the map it reads, that keeps every
// client's issue order (a client pipelines: its operations overlap, and plain
// linearizability would let them swap) and real time (an operation that
// returned before another was called comes first).  This is what the head's
// order gives in mode total_order.  Exact search over (how many of each
// client's operations are placed, the map), with memoisation; gives up
// ("unknown") after `budget` states.
func orderedLinearizable(events []event, budget int) (string, bool) {
	_, why, outcome := orderedSearch(events, budget)
	if outcome == searchRejected {
		return why, false
	}
	if outcome == searchGaveUp {
		unknown++
	}
	return "", true
}

// The outcome of orderedSearch.
const (
	searchFound = iota
	searchRejected
	searchGaveUp
)

// orderedSearch: orderedLinearizable's search; with searchFound, the order it
// found (every operation once).
func orderedSearch(events []event, budget int) ([]recorded, string, int) {
	lists, err := clientSequences(events)
	if err != nil {
		return nil, err.Error(), searchRejected
	}
	// need[i][k][j]: how many of client j's operations must be placed before
	// client i's k-th (those that returned before it was called).
	need := make([][][]int, len(lists))
	for i := range lists {
		need[i] = make([][]int, len(lists[i]))
		for k, x := range lists[i] {
			need[i][k] = make([]int, len(lists))
			for j := range lists {
				for m, y := range lists[j] {
					if y.e.Return < x.e.Call && m+1 > need[i][k][j] {
						need[i][k][j] = m + 1
					}
				}
			}
		}
	}
	position := make([]int, len(lists))
	seen := map[string]bool{}
	explored := 0
	gaveUp := false
	var path []recorded
	var search func(s state) bool
	search = func(s state) bool {
		if exhausted(position, lists) {
			return true
		}
		memo := memoKey(position, s)
		if seen[memo] {
			return false
		}
		seen[memo] = true
		explored++
		if explored > budget {
			gaveUp = true
			return true
		}
		for i := range lists {
			k := position[i]
			if k >= len(lists[i]) {
				continue
			}
			enabled := true
			for j := range lists {
				if position[j] < need[i][k][j] {
					enabled = false
					break
				}
			}
			if !enabled {
				continue
			}
			x := lists[i][k]
			ok, after := step(s, inputOf(x.e), x.out)
			if !ok {
				continue
			}
			position[i]++
			path = append(path, x)
			if search(after) {
				return true
			}
			path = path[:len(path)-1]
			position[i]--
		}
		return false
	}
	if !search(state{}) {
		return nil, "no linearization keeps every client's issue order (whole history)", searchRejected
	}
	if gaveUp {
		return nil, "", searchGaveUp
	}
	return path, "", searchFound
}

// verifyOrder: checks an order of a whole history on its own, without the
// search that found it: every operation once, each client's in issue order,
// none after one that was called after it returned, and every result the one
// the map gives at its place.  Such an order is a linearization.
func verifyOrder(order []recorded, events []event) (string, bool) {
	if len(order) != len(events) {
		return fmt.Sprintf("the order holds %d of the %d operations", len(order), len(events)), false
	}
	last := map[int]int64{}
	s := state{}
	for i, x := range order {
		if previous, seen := last[x.e.Client]; seen && x.e.Seq <= previous {
			return fmt.Sprintf("client %d: operation %d placed after %d", x.e.Client, x.e.Seq, previous), false
		}
		last[x.e.Client] = x.e.Seq
		ok, after := step(s, inputOf(x.e), x.out)
		if !ok {
			return fmt.Sprintf("place %d (client %d seq %d): the result does not match the map", i, x.e.Client, x.e.Seq), false
		}
		s = after
	}
	// Real time: no operation may return before an earlier-placed one was called.
	earliestReturn := int64(math.MaxInt64)
	for i := len(order) - 1; i >= 0; i-- {
		if earliestReturn < order[i].e.Call {
			return fmt.Sprintf("client %d seq %d is placed before an operation that returned before it was called",
				order[i].e.Client, order[i].e.Seq), false
		}
		if order[i].e.Return < earliestReturn {
			earliestReturn = order[i].e.Return
		}
	}
	return "", true
}

// totalOrder: what total_order promises a whole history.  The ordered search
// decides it; the order it finds is checked again by verifyOrder, and is then
// a linearization, so Porcupine (which on these whole-map histories with
// ranges may run for seconds and give up) runs only where the search gave up:
// its plain linearizability is then the part of the promise still checked.
func totalOrder(budget int, timeout time.Duration) func([]event) (string, bool) {
	return func(events []event) (string, bool) {
		order, why, outcome := orderedSearch(events, budget)
		switch outcome {
		case searchRejected:
			return why, false
		case searchFound:
			if why, ok := verifyOrder(order, events); !ok {
				return "the ordered search's order fails its check: " + why, false
			}
			return "", true
		}
		unknown++
		return linearizable(events, timeout)
	}
}

func main() {
	mode := flag.String("mode", "", "total_order, sequential, none or linearizable")
	expectReject := flag.Bool("expect-reject", false, "succeed only if at least one history is rejected")
	timeout := flag.Duration("timeout", 5*time.Second, "Porcupine's time limit per history (then: unknown)")
	quiet := flag.Bool("quiet", false, "print only rejections and the summary")
	budget := flag.Int("budget", 2000000, "states the ordered search explores per history (then: unknown)")
	flag.Parse()
	if *mode != "total_order" && *mode != "sequential" && *mode != "none" && *mode != "linearizable" {
		fmt.Fprintln(os.Stderr, "histcheck: --mode must be total_order, sequential, none or linearizable")
		os.Exit(2)
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "histcheck: no history files given")
		os.Exit(2)
	}
	rejected, operationsChecked := 0, 0
	for _, path := range flag.Args() {
		events, err := load(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "histcheck:", err)
			os.Exit(2)
		}
		operationsChecked += len(events)
		var checks []func([]event) (string, bool)
		lin := func(e []event) (string, bool) { return linearizable(e, *timeout) }
		switch *mode {
		case "total_order":
			checks = append(checks, totalOrder(*budget, *timeout), perKeyReads(programOrderPerKey))
		case "sequential":
			checks = append(checks, replyOrder, perKeyReads(programOrderPerKey))
		case "none":
			checks = append(checks, perKeyReads(lin))
		case "linearizable":
			checks = append(checks, lin)
		}
		reason := ""
		for _, check := range checks {
			if why, ok := check(events); !ok {
				reason = why
				break
			}
		}
		if reason != "" {
			rejected++
			fmt.Printf("%s: REJECTED (%s): %s\n", path, *mode, reason)
		} else if !*quiet {
			fmt.Printf("%s: ok (%d operations)\n", path, len(events))
		}
	}
	fmt.Printf("histcheck %s: %d histories, %d operations, %d rejected, %d unknown (time or state limit)\n",
		*mode, flag.NArg(), operationsChecked, rejected, unknown)
	if *expectReject {
		if rejected == 0 {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if rejected > 0 {
		os.Exit(1)
	}
}
