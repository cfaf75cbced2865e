package session

import (
	"bytes"
	"crypto/sha256"

	"golang.org/x/mod/sumdb/tlog"
)

// MerkleTree is the Merkle tree of a log's records (RFC 6962, hashed as
// golang.org/x/mod/sumdb/tlog hashes it): leaf i is [LeafHash] of record
// i's canonical line, so a log has one tree whichever store keeps it.
//
// A MerkleTree keeps only the compact range: the roots of the largest complete
// subtrees that make up its leaves, at most one per bit of its size. An
// Add costs one leaf hash and, on average, one node hash; Root costs one
// node hash per set bit of the size. Proofs need every stored hash and
// are made from the lines (tlog.StoredHashes), not from a MerkleTree.
//
// The zero MerkleTree is the empty tree. A MerkleTree is not safe for concurrent use.
type MerkleTree struct {
	size  int64
	edges map[int64]tlog.Hash // stored-hash index → hash, the compact range
}

// LeafHash is the leaf hash of a record's canonical line: the RFC 6962
// record hash, SHA-256(0x00 ‖ line), of the line without its newline.
func LeafHash(line []byte) tlog.Hash {
	return tlog.RecordHash(bytes.TrimSuffix(line, []byte("\n")))
}

// HeaderHash is the SHA-256 of a log's header line, without its newline:
// what a checkpoint binds the header with.
func HeaderHash(line []byte) tlog.Hash {
	return tlog.Hash(sha256.Sum256(bytes.TrimSuffix(line, []byte("\n"))))
}

// HeaderHashOf is [HeaderHash] of info's canonical header line.
func HeaderHashOf(info Info) tlog.Hash {
	var buf [256]byte
	return HeaderHash(AppendHeaderLine(buf[:0], info))
}

// RootOf returns the base64 tree hash of recs, records 0 to len(recs)-1
// of a log: what a delegation's [ChildRef] and a fork's [Parent] bind the
// other log with.
func RootOf(recs []Record) string {
	var t MerkleTree
	for _, r := range recs {
		t.AddRecord(r)
	}
	return t.Root().String()
}

// Size returns how many leaves the tree has.
func (t *MerkleTree) Size() int64 { return t.size }

// Add appends the record whose canonical line is line.
func (t *MerkleTree) Add(line []byte) { t.AddHash(LeafHash(line)) }

// AddRecord appends r, which must be record t.Size() of the log.
func (t *MerkleTree) AddRecord(r Record) { t.AddHash(LeafHash(r.line)) }

// AddHash appends a leaf by its leaf hash.
func (t *MerkleTree) AddHash(h tlog.Hash) {
	if t.edges == nil {
		t.edges = make(map[int64]tlog.Hash, 64)
	}
	// The compact range holds every hash tlog reads to add a leaf, so
	// the reader never misses.
	hashes, err := tlog.StoredHashesForRecordHash(t.size, h, tlog.HashReaderFunc(t.read))
	if err != nil { // cannot happen: see read
		panic(err)
	}
	first := tlog.StoredHashIndex(0, t.size)
	for i, h := range hashes {
		t.edges[first+int64(i)] = h
	}
	t.size++
	// Drop what fell inside a larger complete subtree.
	keep := t.rangeIndexes()
	for idx := range t.edges {
		if !containsIndex(keep, idx) {
			delete(t.edges, idx)
		}
	}
}

// Root returns the tree hash of the tree (tlog.TreeHash); the empty
// tree's is the zero hash, as tlog has it.
func (t *MerkleTree) Root() tlog.Hash {
	if t.size == 0 {
		return tlog.Hash{}
	}
	h, err := tlog.TreeHash(t.size, tlog.HashReaderFunc(t.read))
	if err != nil { // cannot happen: see read
		panic(err)
	}
	return h
}

// read serves tlog's reads from the compact range, which holds every
// hash an append or the root needs.
func (t *MerkleTree) read(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		out[i] = t.edges[idx]
	}
	return out, nil
}

// rangeIndexes returns the stored-hash indexes of the compact range of
// the tree's size: one complete subtree per set bit, largest first.
func (t *MerkleTree) rangeIndexes() []int64 {
	var idx [64]int64
	out := idx[:0]
	lo := int64(0)
	for level := 62; level >= 0; level-- {
		if t.size&(1<<level) != 0 {
			out = append(out, tlog.StoredHashIndex(level, lo>>level))
			lo += 1 << level
		}
	}
	return out
}

func containsIndex(s []int64, x int64) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
