package refretention

// SetJudged sets the hook that runs between judging a reference expired
// and deleting it.
func SetJudged(s *Service, f func(name string)) { s.judged = f }
