package slack

// Checked reports whether Slack's settings are known: the check Run begins
// with (or a delivery) has told them. Tests wait for it after starting Run.
func (s *Service) Checked() bool {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return s.health.known
}
