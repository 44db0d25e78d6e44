package meter

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ExtenderUser is the user the extender (Tessera's or the no-op one)
// talks to the API server as. kube-apiserver's request metrics carry no
// user or user agent, so its requests are counted in an audit log that
// records that user's requests only.
const ExtenderUser = "tessera-bench-extender"

// auditPolicy logs the requests of the extender's user, when each arrives
// (to count them) and when it completes (to time them, with the object's
// name), and nothing for anyone else, so the log costs the API server
// next to nothing.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["ResponseStarted", "Panic"]
rules:
- level: Metadata
  users: ["` + ExtenderUser + `"]
- level: None
`

// AuditFlags writes the policy into dir and returns the kube-apiserver
// flags that log to dir/audit.log, and that log's path.
func AuditFlags(dir string) ([]string, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, "", fmt.Errorf("writing the audit policy: %w", err)
	}
	log := filepath.Join(dir, "audit.log")
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + log,
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
	}, log, nil
}

// AuditEvent is the part of an audit event the bench reads.
type AuditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp  time.Time `json:"stageTimestamp"`
}

// ReadAudit calls fn for each event of user in an audit log (JSON lines).
func ReadAudit(r io.Reader, user string, fn func(e *AuditEvent)) error {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; s.Scan(); line++ {
		var e AuditEvent
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			return fmt.Errorf("audit log line %d: %w", line, err)
		}
		if e.User.Username == user {
			fn(&e)
		}
	}
	return s.Err()
}

// RequestCount is how many requests a user made, in all and by verb and resource.
type RequestCount struct {
	Total int
	// ByKind counts by "verb resource[/subresource]".
	ByKind map[string]int
}

// String lists the kinds, most frequent first.
func (c RequestCount) String() string {
	kinds := make([]string, 0, len(c.ByKind))
	for k := range c.ByKind {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if c.ByKind[kinds[i]] != c.ByKind[kinds[j]] {
			return c.ByKind[kinds[i]] > c.ByKind[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s: %d", k, c.ByKind[k]))
	}
	return strings.Join(parts, ", ")
}

// countRequests counts the requests of user in an audit log.
func countRequests(r io.Reader, user string) (RequestCount, error) {
	count := RequestCount{ByKind: map[string]int{}}
	err := ReadAudit(r, user, func(e *AuditEvent) {
		if e.Stage != "RequestReceived" {
			return
		}
		kind := e.Verb
		if e.ObjectRef != nil {
			kind += " " + e.ObjectRef.Resource
			if e.ObjectRef.Subresource != "" {
				kind += "/" + e.ObjectRef.Subresource
			}
		}
		count.Total++
		count.ByKind[kind]++
	})
	return count, err
}

// CountRequestsInFile is countRequests on a file.
func CountRequestsInFile(path, user string) (RequestCount, error) {
	f, err := os.Open(path)
	if err != nil {
		return RequestCount{}, fmt.Errorf("reading the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	return countRequests(f, user)
}
