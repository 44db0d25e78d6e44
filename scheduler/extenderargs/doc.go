// Package extenderargs reads the ExtenderArgs of kube-scheduler's filter
// and prioritize calls. A call over thousands of nodes names each one; to
// read them without an allocation per name, the names are views of the
// request body, which Args owns and reuses for the next call. Such a name
// read after the body is reused would be another call's bytes, so the
// names are lent out only through Names, whose methods say which use is
// borrowing (valid until Release) and which is keeping (a copy), and a
// test can have Release overwrite the body so that a name kept by mistake
// reads as garbage at once.
package extenderargs
