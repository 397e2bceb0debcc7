package pebblebackend

import (
	"encoding/binary"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Key layout. Every key starts with one byte naming its keyspace, so each
// keyspace is a contiguous range and can be scanned with plain bounds:
//
//	0x00 "format"            -> formatVersion (written once, at creation)
//	0x01 <32-byte object id> -> object bytes
//	0x02 <ref name bytes>    -> ref value
//	0x03 <uint64 seq, BE>    -> log record value
//	0x04 <record key bytes>  -> record value
//
// Big-endian sequence numbers sort numerically, so the newest log record is
// the last key of the log keyspace and ReadLog is a reverse range scan.
const (
	prefixMeta   byte = 0x00
	prefixObject byte = 0x01
	prefixRef    byte = 0x02
	prefixLog    byte = 0x03
	prefixRecord byte = 0x04
)

// formatKey holds the layout version. Open refuses a database whose marker is
// missing or different, so a future layout change cannot be misread silently.
const (
	formatKey     = "\x00format"
	formatVersion = "floe-pebble-v1"
)

func objectKey(id backend.ObjectID) []byte {
	k := make([]byte, 1+len(id))
	k[0] = prefixObject
	copy(k[1:], id[:])
	return k
}

func refKey(name string) []byte {
	k := make([]byte, 1+len(name))
	k[0] = prefixRef
	copy(k[1:], name)
	return k
}

func recordKey(key string) []byte {
	k := make([]byte, 1+len(key))
	k[0] = prefixRecord
	copy(k[1:], key)
	return k
}

func logKey(seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLog
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

func decodeLogKey(k []byte) (uint64, error) {
	if len(k) != 9 || k[0] != prefixLog {
		return 0, fmt.Errorf("malformed log key %x", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

// prefixEnd returns the smallest key greater than every key starting with p,
// for use as an exclusive upper bound. Keys here always start with a keyspace
// byte below 0xff, so a successor always exists.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // unreachable for keys in this layout; nil means "no bound"
}
