package main

import (
	"encoding/json"
	"testing"
	"time"
)

func ev(client int, seq, call, ret, round int64, op string, key int64, value uint64, out string) event {
	return event{Client: client, Seq: seq, Call: call, Return: ret, Round: round, Op: op, Key: key, Value: value,
		Out: json.RawMessage(out)}
}

// A write that completed before a read began must be seen by it.
func TestStaleReadIsNotLinearizable(t *testing.T) {
	good := []event{ev(0, 0, 0, 10, 1, "insert", 1, 5, "0"), ev(1, 0, 20, 30, 1, "find", 1, 0, "5")}
	if _, ok := linearizable(good, time.Second); !ok {
		t.Fatal("a read after a write that returns the write was rejected")
	}
	stale := []event{ev(0, 0, 0, 10, 1, "insert", 1, 5, "0"), ev(1, 0, 20, 30, 1, "find", 1, 0, "-1")}
	if _, ok := linearizable(stale, time.Second); ok {
		t.Fatal("a stale read after a completed write was accepted")
	}
	concurrent := []event{ev(0, 0, 0, 25, 1, "insert", 1, 5, "0"), ev(1, 0, 20, 30, 1, "find", 1, 0, "-1")}
	if _, ok := linearizable(concurrent, time.Second); !ok {
		t.Fatal("a read concurrent with a write that misses it was rejected")
	}
}

// A range that sees a later insert but not an earlier one (both completed in
// that order while it ran) is not linearizable.
func TestRangeSeesLaterNotEarlier(t *testing.T) {
	bad := []event{
		ev(0, 0, 0, 100, 1, "range", 0, 0, "[[9,2]]"),
		ev(1, 0, 10, 20, 1, "insert", 1, 1, "0"),
		ev(1, 1, 30, 40, 2, "insert", 9, 2, "0"),
	}
	bad[0].Hi = 10
	if _, ok := linearizable(bad, time.Second); ok {
		t.Fatal("a range that saw the later insert only was accepted")
	}
}

// One client's two writes to a key, applied out of issue order.
func TestProgramOrderPerKey(t *testing.T) {
	inOrder := []event{
		ev(0, 0, 0, 50, 1, "insert", 3, 1, "0"),
		ev(0, 1, 1, 50, 1, "insert", 3, 2, "1"),
		ev(0, 2, 60, 70, 0, "find", 3, 0, "2"),
	}
	inOrder[2].Final = true
	if _, ok := programOrderPerKey(inOrder); !ok {
		t.Fatal("writes applied in issue order were rejected")
	}
	reordered := []event{
		ev(0, 0, 0, 50, 1, "insert", 3, 1, "1"),
		ev(0, 1, 1, 50, 1, "insert", 3, 2, "0"),
		ev(0, 2, 60, 70, 0, "find", 3, 0, "1"),
	}
	reordered[2].Final = true
	if _, ok := programOrderPerKey(reordered); ok {
		t.Fatal("writes applied against issue order were accepted")
	}
	// Linearizability alone accepts it: the two writes overlap.
	if _, ok := linearizable(reordered, time.Second); !ok {
		t.Fatal("expected the overlapping reordered writes to be linearizable")
	}
}

func TestReplyOrder(t *testing.T) {
	ok := []event{ev(0, 0, 0, 10, 2, "find", 1, 0, "-1"), ev(0, 1, 1, 10, 2, "find", 2, 0, "-1")}
	if _, pass := replyOrder(ok); !pass {
		t.Fatal("replies in one round were rejected")
	}
	bad := []event{ev(0, 0, 0, 10, 3, "find", 1, 0, "-1"), ev(0, 1, 1, 10, 2, "find", 2, 0, "-1")}
	if _, pass := replyOrder(bad); pass {
		t.Fatal("a later operation completing first was accepted")
	}
}

// Message passing: A writes x then y (pipelined); B sees y but then not x.
// Linearizable (A's writes overlap), but not in A's issue order.
func TestOrderedLinearizableMessagePassing(t *testing.T) {
	history := []event{
		ev(0, 0, 0, 100, 1, "insert", 1, 7, "0"),
		ev(0, 1, 1, 50, 1, "insert", 2, 8, "0"),
		ev(1, 0, 60, 70, 1, "find", 2, 0, "8"),
		ev(1, 1, 80, 90, 2, "find", 1, 0, "-1"),
	}
	if _, ok := linearizable(history, time.Second); !ok {
		t.Fatal("expected the history to be linearizable")
	}
	if _, ok := orderedLinearizable(history, 100000); ok {
		t.Fatal("a reader saw A's second write but not its first: accepted")
	}
	history[3].Out = json.RawMessage("7")
	if _, ok := orderedLinearizable(history, 100000); !ok {
		t.Fatal("the same history with x seen was rejected")
	}
}

// The Redis register of apps/serve/tests/history.py: a GET that misses a SET
// and an INCR completed before it is rejected; INCR counts from an absent key
// as 0 and DEL removes it.
func TestRedisRegister(t *testing.T) {
	good := []event{
		ev(0, 0, 0, 10, 0, "set", 1, 7, "0"),
		ev(1, 0, 20, 30, 0, "incr", 1, 1, "8"),
		ev(2, 0, 40, 50, 0, "get", 1, 0, "8"),
		ev(0, 1, 60, 70, 0, "del", 1, 0, "1"),
		ev(1, 1, 80, 90, 0, "incr", 1, 1, "1"),
		ev(2, 1, 100, 110, 0, "del", 2, 0, "0"),
	}
	if why, ok := linearizable(good, time.Second); !ok {
		t.Fatal("a legal Redis history was rejected:", why)
	}
	stale := append([]event{}, good[:3]...)
	stale[2] = ev(2, 0, 40, 50, 0, "get", 1, 0, "7")
	if _, ok := linearizable(stale, time.Second); ok {
		t.Fatal("a GET that missed a completed INCR was accepted")
	}
	overlapping := append([]event{}, good[:3]...)
	overlapping[1] = ev(1, 0, 20, 45, 0, "incr", 1, 1, "8")
	overlapping[2] = ev(2, 0, 40, 50, 0, "get", 1, 0, "7")
	if _, ok := linearizable(overlapping, time.Second); !ok {
		t.Fatal("a GET overlapping an INCR that misses it was rejected")
	}
}

// The stale range of issue 42: one client inserts 1, then 2, then ranges over
// the key; a range that returns 1 breaks the client's issue order on that key
// (sequential), and is no snapshot either (total_order's whole-map check).
func TestStaleRangeAfterOwnWrite(t *testing.T) {
	history := func(seen string) []event {
		h := []event{
			ev(0, 0, 0, 40, 1, "insert", 5, 1, "0"),
			ev(0, 1, 1, 40, 1, "insert", 5, 2, "1"),
			ev(0, 2, 2, 40, 1, "range", 5, 0, seen),
			ev(0, 3, 3, 40, 1, "find", 5, 0, "2"),
		}
		h[2].Hi = 5
		return h
	}
	if _, ok := perKeyReads(programOrderPerKey)(history("[[5,2]]")); !ok {
		t.Fatal("a range that sees the client's own last write was rejected")
	}
	if _, ok := perKeyReads(programOrderPerKey)(history("[[5,1]]")); ok {
		t.Fatal("a range that returns the client's overwritten value was accepted (sequential)")
	}
	if _, ok := orderedLinearizable(history("[[5,1]]"), 100000); ok {
		t.Fatal("a range that returns the client's overwritten value was accepted (total_order)")
	}
	// The same range by the match path.
	m := history("[[5,1]]")
	m[2].Op = "match"
	if _, ok := perKeyReads(programOrderPerKey)(m); ok {
		t.Fatal("a stale match was accepted")
	}
	// A range that misses the client's own earlier write.
	if _, ok := perKeyReads(programOrderPerKey)(history("[]")); ok {
		t.Fatal("a range that misses the client's own write was accepted")
	}
}

// none: a range reads each key at one moment inside its interval; missing a
// write that completed before the range was called is not allowed.
func TestNoneRangeReadsEachKeyInTime(t *testing.T) {
	h := []event{
		ev(0, 0, 0, 10, 1, "insert", 3, 7, "0"),
		ev(1, 0, 20, 30, 1, "range", 0, 0, "[]"),
	}
	h[1].Hi = 9
	if _, ok := perKeyReads(func(e []event) (string, bool) { return linearizable(e, time.Second) })(h); ok {
		t.Fatal("a range that misses a completed write was accepted")
	}
	h[1].Out = json.RawMessage("[[3,7]]")
	if _, ok := perKeyReads(func(e []event) (string, bool) { return linearizable(e, time.Second) })(h); !ok {
		t.Fatal("a range that sees a completed write was rejected")
	}
	// Not a snapshot: two keys read at different moments, each legal alone.
	h = []event{
		ev(0, 0, 0, 100, 1, "range", 0, 0, "[[9,2]]"),
		ev(1, 0, 10, 20, 1, "insert", 1, 1, "0"),
		ev(1, 1, 30, 40, 2, "insert", 9, 2, "0"),
	}
	h[0].Hi = 10
	if _, ok := perKeyReads(func(e []event) (string, bool) { return linearizable(e, time.Second) })(h); !ok {
		t.Fatal("none promises no snapshot, but the per-key reads were rejected")
	}
}

// limit and descending: the result is the first (last) entries, and only the
// keys up to (from) the last one returned were read.
func TestRangeLimitAndDescending(t *testing.T) {
	s := state{{1, 10}, {2, 20}, {3, 30}}
	if got := rangeText(s, input{op: "range", key: 0, hi: 9, limit: 2}); got != "1:10;2:20;" {
		t.Fatalf("ascending limit 2: %s", got)
	}
	if got := rangeText(s, input{op: "range", key: 0, hi: 9, limit: 2, desc: true}); got != "3:30;2:20;" {
		t.Fatalf("descending limit 2: %s", got)
	}
	// Client 0 wrote 3 before; a range cut at key 1 by its limit did not read 3.
	h := []event{
		ev(0, 0, 0, 10, 1, "insert", 1, 4, "0"),
		ev(0, 1, 11, 20, 2, "insert", 3, 5, "0"),
		ev(0, 2, 21, 30, 3, "range", 0, 0, "[[1,4]]"),
	}
	h[2].Hi, h[2].Limit = 9, 1
	if _, ok := perKeyReads(programOrderPerKey)(h); !ok {
		t.Fatal("a range cut by its limit was taken to have read beyond its last key")
	}
	h[2].Limit = 2 // not cut: it read key 3 as absent
	if _, ok := perKeyReads(programOrderPerKey)(h); ok {
		t.Fatal("a range that missed the client's write below its limit was accepted")
	}
	h[2].Limit, h[2].Desc, h[2].Out = 1, true, json.RawMessage("[[3,5]]")
	if _, ok := perKeyReads(programOrderPerKey)(h); !ok {
		t.Fatal("a descending range cut by its limit was rejected")
	}
	h[2].Out = json.RawMessage("[[1,4],[3,5]]")
	if _, ok := perKeyReads(programOrderPerKey)(h); ok {
		t.Fatal("a result longer than its limit and out of order was accepted")
	}
}

// count and erase_range (issue 49): in total_order one read or write of the
// whole interval; per key (sequential, none) an erase_range erases each key.
func TestCountAndEraseRange(t *testing.T) {
	history := []event{
		ev(0, 0, 0, 10, 1, "insert", 1, 5, "0"),
		ev(0, 1, 11, 20, 2, "insert", 3, 6, "0"),
		ev(1, 0, 30, 40, 1, "count", 0, 0, "2"),
		ev(1, 1, 50, 60, 2, "erase_range", 1, 0, "2"),
		ev(0, 2, 70, 80, 3, "find", 3, 0, "-1"),
	}
	history[2].Hi, history[3].Hi = 5, 3
	if _, ok := orderedLinearizable(history, 100000); !ok {
		t.Fatal("a count and an erase_range of what was there were rejected (ordered)")
	}
	if _, ok := linearizable(history, time.Second); !ok {
		t.Fatal("a count and an erase_range of what was there were rejected (Porcupine)")
	}
	if _, ok := perKeyReads(programOrderPerKey)(history); !ok {
		t.Fatal("an erase_range as per-key erases was rejected")
	}
	wrongCount := append([]event(nil), history...)
	wrongCount[2].Out = json.RawMessage("1")
	if _, ok := orderedLinearizable(wrongCount, 100000); ok {
		t.Fatal("a count that missed a completed insert was accepted")
	}
	// Per key only the issue order of one client and the final reads bind.
	own := []event{
		ev(0, 0, 0, 10, 1, "insert", 3, 6, "0"),
		ev(0, 1, 11, 20, 2, "erase_range", 1, 0, "1"),
		ev(0, 2, 30, 40, 0, "find", 3, 0, "-1"),
	}
	own[1].Hi, own[2].Final = 3, true
	if _, ok := perKeyReads(programOrderPerKey)(own); !ok {
		t.Fatal("an erase_range after the caller's insert was rejected (per key)")
	}
	own[2].Out = json.RawMessage("6")
	if _, ok := perKeyReads(programOrderPerKey)(own); ok {
		t.Fatal("a key that survived the caller's later erase_range was accepted (per key)")
	}
	notErased := append([]event(nil), history...)
	notErased[4].Out = json.RawMessage("6")
	if _, ok := orderedLinearizable(notErased, 100000); ok {
		t.Fatal("a key that survived a completed erase_range was accepted (ordered)")
	}
}

// reduce (std::plus at the node): folds into a present key, stores a new one.
func TestReduce(t *testing.T) {
	history := []event{
		ev(0, 0, 0, 10, 1, "reduce", 1, 5, "0"),
		ev(1, 0, 20, 30, 1, "reduce", 1, 7, "1"),
		ev(0, 1, 40, 50, 2, "find", 1, 0, "12"),
	}
	if _, ok := linearizable(history, time.Second); !ok {
		t.Fatal("two reduces and the sum were rejected")
	}
	lost := append([]event(nil), history...)
	lost[2].Out = json.RawMessage("7")
	if _, ok := linearizable(lost, time.Second); ok {
		t.Fatal("a reduce that replaced instead of folding was accepted")
	}
}

// total_order's check: the order the search finds passes verifyOrder, and
// verifyOrder on its own refuses an order that breaks real time, a client's
// issue order or a result.
func TestTotalOrderVerifiesItsOrder(t *testing.T) {
	history := []event{
		ev(0, 0, 0, 10, 1, "insert", 1, 5, "0"),
		ev(1, 0, 20, 30, 2, "find", 1, 0, "5"),
		ev(1, 1, 21, 40, 3, "insert", 1, 6, "1"),
		ev(0, 1, 35, 50, 4, "find", 1, 0, "6"),
	}
	order, _, outcome := orderedSearch(history, 100000)
	if outcome != searchFound {
		t.Fatal("the ordered search found no order of a linearizable history")
	}
	if why, ok := verifyOrder(order, history); !ok {
		t.Fatalf("the search's order failed its check: %s", why)
	}
	if why, ok := totalOrder(100000, time.Second)(history); !ok {
		t.Fatalf("total_order rejected a linearizable history: %s", why)
	}
	rec := func(e event) recorded {
		out, err := parseOutput(e)
		if err != nil {
			t.Fatal(err)
		}
		return recorded{e, out}
	}
	a, b, c, d := rec(history[0]), rec(history[1]), rec(history[2]), rec(history[3])
	if _, ok := verifyOrder([]recorded{a, b, c, d}, history); !ok {
		t.Fatal("the right order was refused")
	}
	// c before b: client 1's issue order broken (and b's result no longer matches).
	if _, ok := verifyOrder([]recorded{a, c, b, d}, history); ok {
		t.Fatal("an order against a client's issue order was accepted")
	}
	// a placed after b breaks real time (a returned at 10, b was called at 20).
	if _, ok := verifyOrder([]recorded{b, a, c, d}, history); ok {
		t.Fatal("an order against real time was accepted")
	}
	if _, ok := verifyOrder([]recorded{a, b, c}, history); ok {
		t.Fatal("an order missing an operation was accepted")
	}
	// d called at 45, after c's insert returned (40), and still reading 5.
	stale := append([]event(nil), history...)
	stale[3] = ev(0, 1, 45, 50, 4, "find", 1, 0, "5")
	if _, ok := totalOrder(100000, time.Second)(stale); ok {
		t.Fatal("total_order accepted a read that missed a write that returned before it was called")
	}
}
