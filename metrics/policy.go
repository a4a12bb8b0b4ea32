package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/memgate/memgate/memory"
)

// Policy error reasons (the names package policy's ErrorReason uses) and
// reload results, so alerts can name them.
const (
	policyErrTimeout  = "timeout"    // the evaluation ran past its deadline
	policyErrCanceled = "canceled"   // the caller went away
	policyErrEval     = "eval_error" // the policy failed
	reloadSuccess     = "success"
	reloadFailure     = "failure"
)

// PolicyEvaluated records one policy evaluation: its latency and, if err is
// not nil, its failure. The policy engine calls it after every evaluation
// (or the classifier is wrapped with InstrumentClassifier; not both, or
// evaluations count twice).
func (m *Metrics) PolicyEvaluated(took time.Duration, err error) {
	m.policyEval.Observe(max(took, 0).Seconds())
	if err != nil {
		m.policyErrors.WithLabelValues(m.policyReasons.value(m.policyErrorReason(err))).Inc()
	}
}

// defaultPolicyErrorReason tells timeouts and cancellations from other
// failures; WithPolicyErrorReason can name failures more finely.
func defaultPolicyErrorReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return policyErrTimeout
	case errors.Is(err, context.Canceled):
		return policyErrCanceled
	}
	return policyErrEval
}

// PolicyLoaded records a policy load or reload. On success revision becomes
// the one active revision; on failure the previous one stays active, as the
// policy engine keeps it.
func (m *Metrics) PolicyLoaded(revision string, err error) {
	if err != nil {
		m.policyReloads.WithLabelValues(reloadFailure).Inc()
		return
	}
	m.policyReloads.WithLabelValues(reloadSuccess).Inc()
	m.revisionMu.Lock()
	defer m.revisionMu.Unlock()
	m.policyRevision.Reset()
	m.policyRevision.WithLabelValues(revision).Set(1)
}

// InstrumentClassifier wraps a classifier so every evaluation (and every
// placement, when the classifier is a memory.Placer) is recorded with
// PolicyEvaluated. A decision that arrives after the context expired
// counts as a timeout, as the governor then distrusts it and parks the
// write. Decisions and errors pass through unchanged.
func (m *Metrics) InstrumentClassifier(c memory.Classifier) memory.Classifier {
	ic := instrumentedClassifier{m: m, c: c}
	if w, ok := c.(memory.WritePolicy); ok {
		return instrumentedWritePolicy{instrumentedPlacer{instrumentedClassifier: ic, p: w}, w}
	}
	if p, ok := c.(memory.Placer); ok {
		return instrumentedPlacer{instrumentedClassifier: ic, p: p}
	}
	return ic
}

type instrumentedClassifier struct {
	m *Metrics
	c memory.Classifier
}

func (i instrumentedClassifier) Classify(ctx context.Context, in *memory.PolicyInput) (memory.Decision, error) {
	start := time.Now()
	dec, err := i.c.Classify(ctx, in)
	i.m.observeEval(ctx, start, err)
	return dec, err
}

type instrumentedPlacer struct {
	instrumentedClassifier
	p memory.Placer
}

func (i instrumentedPlacer) Place(ctx context.Context, in *memory.PolicyInput) (memory.Placement, error) {
	start := time.Now()
	pl, err := i.p.Place(ctx, in)
	i.m.observeEval(ctx, start, err)
	return pl, err
}

type instrumentedWritePolicy struct {
	instrumentedPlacer
	w memory.WritePolicy
}

func (i instrumentedWritePolicy) PlaceAndClassify(ctx context.Context, in *memory.PolicyInput) (memory.Placement, memory.Decision, error) {
	start := time.Now()
	pl, dec, err := i.w.PlaceAndClassify(ctx, in)
	if !errors.Is(err, memory.ErrNoWriteQuery) { // no evaluation took place
		i.m.observeEval(ctx, start, err)
	}
	return pl, dec, err
}

func (m *Metrics) observeEval(ctx context.Context, start time.Time, err error) {
	if err == nil {
		err = ctx.Err()
	}
	m.PolicyEvaluated(time.Since(start), err)
}
