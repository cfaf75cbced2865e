package session

import (
	"strconv"
	"time"
)

// Version is the log format version this package writes and reads.
const Version = 1

// DefaultTenant is the tenant of a session whose header names none: logs
// written before tenants, and sessions made without an owner (the CLI).
const DefaultTenant = "default"

// Info is a session's header: line 1 of its log.
type Info struct {
	ID      string
	Version int
	Created time.Time
	// Tenant is the tenant the session belongs to ("" is [DefaultTenant]);
	// forks and child sessions inherit it. By names who created the
	// session ("" when nobody said).
	Tenant string
	By     string
	// Parent names the session and last inherited seq of a fork, or the
	// session and tool call a sub-agent's child session answers; nil
	// otherwise.
	Parent *Parent
}

// Parent is where a forked or child session comes from. For a fork, Seq
// is the last seq it inherits. For a sub-agent's child session, Call is
// the id of the parent's tool call the child answers and Seq the seq of
// that tool/call; a child inherits no events.
//
// Root, for a fork, binds the inherited prefix: the base64 tree hash
// ([RootOf]) of the parent's records 0 to Seq, which are also the fork's
// own first Seq+1 records. "" for a child session and in forks made
// before it (the fork is then not bound).
type Parent struct {
	ID   string `json:"id"`
	Seq  int64  `json:"seq"`
	Call string `json:"call,omitempty"`
	Root string `json:"root,omitempty"`
}

// TenantOf returns the tenant session info belongs to: its Tenant, or
// [DefaultTenant] when it names none.
func (i Info) TenantOf() string {
	if i.Tenant == "" {
		return DefaultTenant
	}
	return i.Tenant
}

// AppendHeaderLine appends the log header line of info, with its newline:
//
//	{"type":"session","version":1,"id":"…","created":"…","tenant":"…","by":"…","parent":{"id":"…","seq":41}}
//
// with tenant and by omitted when empty, "call":"…" after the parent's
// seq for a child session and "root":"…" last for a bound fork.
// A zero Version is written as [Version].
func AppendHeaderLine(dst []byte, info Info) []byte {
	v := info.Version
	if v == 0 {
		v = Version
	}
	dst = append(dst, `{"type":"session","version":`...)
	dst = strconv.AppendInt(dst, int64(v), 10)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, info.ID)
	dst = append(dst, `,"created":`...)
	dst = appendTime(dst, logTime(info.Created))
	if info.Tenant != "" {
		dst = append(dst, `,"tenant":`...)
		dst = appendString(dst, info.Tenant)
	}
	if info.By != "" {
		dst = append(dst, `,"by":`...)
		dst = appendString(dst, info.By)
	}
	if p := info.Parent; p != nil {
		dst = append(dst, `,"parent":{"id":`...)
		dst = appendString(dst, p.ID)
		dst = append(dst, `,"seq":`...)
		dst = strconv.AppendInt(dst, p.Seq, 10)
		if p.Call != "" {
			dst = append(dst, `,"call":`...)
			dst = appendString(dst, p.Call)
		}
		if p.Root != "" {
			dst = append(dst, `,"root":`...)
			dst = appendString(dst, p.Root)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}', '\n')
}

// ValidID reports whether id can name a session: 1 to 128 ASCII letters,
// digits, '-' and '_' (a ULID, as the live manager makes, or a test name).
// The restriction keeps ids safe as file names.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
