package extenderargs

// PlainWord reports whether none of the 8 bytes of w needs escaping in a
// JSON string: each is ASCII, at least 0x20, and neither '"' nor a
// backslash. Names and reasons are almost all such bytes, so scanning
// them here and escaping them in the extender's answers look at a word at
// a time.
func PlainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// A byte below n sets its high bit in (w - n*ones) &^ w, provided
	// that no byte of w has its own high bit set, which highs checks.
	below := func(w uint64, n uint64) uint64 { return (w - n*ones) &^ w }
	quote, backslash := w^('"'*ones), w^('\\'*ones)
	return (w|below(w, 0x20)|below(quote, 1)|below(backslash, 1))&highs == 0
}
