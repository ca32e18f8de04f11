#!/usr/bin/env python3
"""Writes the seed corpus of the message fuzzer (tests/fuzz/corpus/).

Each file is one fuzz input (see message_fuzz.cpp): a configuration byte, a
request-count byte, then messages as u16 length + bytes.  A message is a
sequence of groups {u16 handler, u16 0, u32 record_bytes, u32 count} + records.
Handler ids follow registration order: 0 engine reply, then hash_map's
insert_one, insert, find, take, erase, insert_if_absent, visit, find_many,
find_many_reply, take_many, rejected, visit_failed.  Rerun after changing that
order.  Visitors: 0 replaces the values, 1 throws.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
NO_SLOT = 0xFFFFFFFF
(REPLY, INSERT_ONE, INSERT, FIND, TAKE, ERASE, INSERT_IF_ABSENT, VISIT, FIND_MANY, FIND_MANY_REPLY, TAKE_MANY,
 REJECTED, VISIT_FAILED) = range(13)


def group(handler, records):
    size = len(records[0])
    assert all(len(r) == size for r in records)
    return struct.pack('<HHII', handler, 0, size, len(records)) + b''.join(records)


def u32(x): return struct.pack('<I', x)
def u64(x): return struct.pack('<Q', x)
def s(text): return u32(len(text)) + text.encode()


def fuzz_input(configuration, requests, *messages):
    out = bytes([configuration, requests])
    for m in messages:
        out += struct.pack('<H', len(m)) + m
    return out


U64, STRING, INSIDE_BATCH, TAKE_BATCH, CAPACITY = 0x00, 0x01, 0x20, 0x40, 0x08
seeds = {
    'u64_insert_one': fuzz_input(U64, 0, group(INSERT_ONE, [u64(k) + u64(k * 10) for k in (0, 2, 4)])),
    'u64_insert_one_capacity': fuzz_input(U64 | CAPACITY, 0, group(INSERT_ONE, [u64(k) + u64(k) for k in range(9)])),
    'u64_insert_request': fuzz_input(U64, 0, group(INSERT, [u32(3) + u32(2) + u64(6) + u64(60) + u64(61)])),
    'u64_insert_async': fuzz_input(U64 | CAPACITY, 0, group(INSERT, [u32(NO_SLOT) + u32(3) + u64(6) + u64(1) + u64(2) + u64(3)])),
    'u64_find_take_erase': fuzz_input(U64, 0, group(FIND, [u32(0) + u32(5) + u64(0)]) + group(TAKE, [u32(1) + u32(1) + u64(2)])
                                      + group(ERASE, [u32(2) + u32(0) + u64(4)])),
    'u64_insert_if_absent': fuzz_input(U64, 0, group(INSERT_IF_ABSENT, [u32(0) + u64(0) + u64(7), u32(NO_SLOT) + u64(40) + u64(8)])),
    'u64_visit': fuzz_input(U64, 0, group(VISIT, [u32(0) + u32(0) + u64(2) + u64(5)])),
    'u64_visit_throws': fuzz_input(U64, 0, group(VISIT, [u32(0) + u32(1) + u64(2) + u64(5),
                                                        u32(NO_SLOT) + u32(1) + u64(4) + u64(6)])),
    'u64_visit_failed': fuzz_input(U64, 0, group(VISIT_FAILED, [u32(2) + b'visitor threw', u32(1) + b'second failed'])),
    'u64_find_many': fuzz_input(U64, 0, group(FIND_MANY, [u32(1) + u32(0) + u32(3) + u64(0), u32(1) + u32(1) + u32(3) + u64(1)])),
    'u64_take_many': fuzz_input(U64, 0, group(TAKE_MANY, [u32(1) + u32(0) + u32(3) + u64(0)])),
    'u64_reply_find': fuzz_input(U64, 1, group(REPLY, [u32(0) + u32(2) + u64(11) + u64(12)])),
    'u64_replies_all_kinds': fuzz_input(U64, 5, group(REPLY, [u32(0) + u32(1) + u64(11)]), group(REPLY, [u32(1) + u32(0) + u32(0)]),
                                        group(REPLY, [u32(2) + u32(4)]), group(REPLY, [u32(3) + u32(1)]),
                                        group(REPLY, [u32(4) + u32(1) + u64(99)])),
    'u64_reply_abandoned': fuzz_input(U64, 0x10, group(REPLY, [u32(0) + u32(0)])),
    'u64_rejected': fuzz_input(U64, 0, group(REJECTED, [u32(3), u32(4)])),
    'u64_find_many_reply': fuzz_input(U64 | INSIDE_BATCH, 0, group(FIND_MANY_REPLY, [u32(1) + u32(i) + u32(1) + u64(i) for i in range(6)])),
    'u64_take_many_reply': fuzz_input(U64 | INSIDE_BATCH | TAKE_BATCH, 0,
                                      group(FIND_MANY_REPLY, [u32(1) + u32(i) + u32(0) for i in range(6)])),
    'u64_two_messages': fuzz_input(U64, 1, group(INSERT_ONE, [u64(8) + u64(1)]) + group(FIND, [u32(NO_SLOT - 1) + u32(1) + u64(8)]),
                                   group(REPLY, [u32(0) + u32(1) + u64(1)])),
    'string_insert': fuzz_input(STRING, 0, group(INSERT, [u32(NO_SLOT) + u32(2) + s('key0') + s('ab') + s('cd')])),
    'string_find_take': fuzz_input(STRING, 0, group(FIND, [u32(0) + u32(4) + s('key0')]) + group(TAKE, [u32(1) + u32(1) + s('key2')])),
    'string_visit': fuzz_input(STRING, 0, group(VISIT, [u32(0) + u32(0) + s('key4') + s('new')])),
    'string_visit_throws': fuzz_input(STRING, 0, group(VISIT, [u32(NO_SLOT) + u32(1) + s('key4') + s('new')])),
    'string_reply_find': fuzz_input(STRING, 1, group(REPLY, [u32(0) + u32(2) + s('x') + s('yz')])),
    'string_insert_if_absent': fuzz_input(STRING | CAPACITY, 0, group(INSERT_IF_ABSENT, [u32(NO_SLOT) + s('new') + s('v')])),
    'string_find_many_reply': fuzz_input(STRING | INSIDE_BATCH, 0, group(FIND_MANY_REPLY, [u32(1) + u32(0) + u32(1) + s('vv')])),
}
# linear_hash_map (configuration bit 0x80; message_fuzz.cpp run_linear_hash_map).
# Handler ids: 0 engine reply, then request, reply, token, activate, ship, ship_ack.
LH, LH_HOSTS_BUCKET0 = 0x80, 0x08
(LH_REQUEST, LH_REPLY, LH_TOKEN, LH_ACTIVATE, LH_SHIP, LH_SHIP_ACK) = range(1, 7)


def lh_request(op, slot, client, address, key, value=b'', hops=0):
    return (bytes([op, hops]) + b'\0\0' + u32(slot) + u32(client) + u32(address) + u32(address)
            + u32(len(key)) + u32(len(value)) + key + value)


def lh_entry(hash_value, key, value):
    return u64(hash_value) + u32(len(key)) + u32(len(value)) + key + value


seeds.update({
    # This rank is dormant: activation as bucket 1, one shipment, then requests for it.
    'lh_activate_ship_request': fuzz_input(LH | 0x02, 0,
        group(LH_ACTIVATE, [u32(1) + u32(1) + u32(0) + u32(1) + u32(0)])
        + group(LH_SHIP, [u32(0) + u32(2) + u32(3) + bytes([1, 0, 0, 0]) + lh_entry(3, b'ab', b'xy') + lh_entry(7, b'cd', b'')])
        + group(LH_REQUEST, [lh_request(1, NO_SLOT, 1, 1, b'ab')])),
    'lh_request_before_activation': fuzz_input(LH | 0x02, 0,
        group(LH_REQUEST, [lh_request(0, NO_SLOT, 1, 1, b'key', b'v', hops=1)]),
        group(LH_ACTIVATE, [u32(1) + u32(1) + u32(0) + u32(1) + u32(0)]) + group(LH_SHIP, [u32(0) + u32(0) + u32(1) + bytes([1, 0, 0, 0])])),
    # Replies to this client's pending find / insert / erase (slots 0, 1, 2).
    'lh_replies': fuzz_input(LH | 0x02, 3,
        group(LH_REPLY, [u32(0) + u32(0) + u32(0) + u32(0) + bytes([1, 0, 0, 1]) + b'val'])
        + group(LH_REPLY, [u32(1) + u32(0) + u32(1) + u32(1) + bytes([0, 1, 0, 2])])
        + group(LH_REPLY, [u32(2) + u32(0) + u32(0) + u32(2) + bytes([2, 2, 0, 0])])),
    # This rank holds bucket 0 and splits onto rank 1: acknowledge, hand the token back.
    'lh_split_acks': fuzz_input(LH | LH_HOSTS_BUCKET0 | 0x02, 0,
        group(LH_SHIP_ACK, [u32(0)]), group(LH_SHIP_ACK, [u32(1)]), group(LH_TOKEN, [u32(0) + u32(1)])),
})
os.makedirs(os.path.join(HERE, 'corpus'), exist_ok=True)
for name, data in sorted(seeds.items()):
    with open(os.path.join(HERE, 'corpus', name), 'wb') as f:
        f.write(data)
print(f'wrote {len(seeds)} inputs to {os.path.join(HERE, "corpus")}')
