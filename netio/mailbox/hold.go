package mailbox

// Hold stops every reader filing into m at its next frame, until release is called: tests
// outside the package use it for a rank that does not read (its socket fills up).
func (m *Mailbox) Hold() (release func()) {
	m.mu.Lock()
	return m.mu.Unlock
}
