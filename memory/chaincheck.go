package memory

import "fmt"

// ChainCheck checks events handed to it one at a time, in order, as Verify
// checks rows: ids 1, 2, 3, ..., each prev_hash the previous hash, each
// hash the recomputed one. After the first break it only counts. Package
// portable checks an export with it while reading.
type ChainCheck struct {
	v Verification
}

// NewChainCheck returns a check of an empty chain.
func NewChainCheck() *ChainCheck {
	return &ChainCheck{v: Verification{OK: true, HeadHash: GenesisHash}}
}

// Add checks e and returns the reason it breaks the chain (Verify's
// words), or "".
func (c *ChainCheck) Add(e Event) string {
	c.v.Events++
	if !c.v.OK {
		return ""
	}
	reason := ""
	switch {
	case e.ID != c.v.HeadID+1:
		reason = fmt.Sprintf(reasonGapFmt, c.v.HeadID+1, e.ID)
	case e.PrevHash != c.v.HeadHash:
		reason = fmt.Sprintf(reasonPrevFmt, e.ID-1)
	case Hash(e.ID, e.TS, e.Session, e.Kind, e.Content, e.PrevHash) != e.Hash:
		reason = reasonHash
	}
	if reason != "" {
		c.v.OK, c.v.BreakAtID, c.v.Reason = false, e.ID, reason
		return reason
	}
	c.v.HeadID, c.v.HeadHash = e.ID, e.Hash
	return ""
}

// Result is the verification so far: Verify's answer for the events
// added.
func (c *ChainCheck) Result() Verification { return c.v }
