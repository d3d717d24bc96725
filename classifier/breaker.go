package classifier

import (
	"errors"
	"net/http"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Breaker defaults.
const (
	defaultBreakerFailures = 5
	defaultBreakerTimeout  = 30 * time.Second
)

// errCallerGone reports that the caller's context ended before the
// provider answered; it says nothing about the provider, so the breaker
// ignores it.
var errCallerGone = errors.New("caller's context ended")

// newBreaker wraps one provider. It opens after failures consecutive
// failures — transport errors, timeouts, non-2xx answers, answers not in
// the provider's wire format — and lets one probe call through after
// timeout. A reply that arrives but is not a valid verdict is the model's
// failure, not the provider's, and counts as a success. A request the
// provider refuses as it is (requestRefused) counts as neither.
func newBreaker(name string, failures uint32, timeout time.Duration, onChange func(from, to gobreaker.State)) *gobreaker.CircuitBreaker[string] {
	st := gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     timeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || errors.Is(err, ErrInvalidReply)
		},
		IsExcluded: func(err error) bool { return errors.Is(err, errCallerGone) || requestRefused(err) },
	}
	if onChange != nil {
		st.OnStateChange = func(_ string, from, to gobreaker.State) { onChange(from, to) }
	}
	return gobreaker.NewCircuitBreaker[string](st)
}

// requestRefused reports a provider's answer about the request, not about
// itself: 400, 413 or 422 (past the model's context, content it will not
// take). The breaker does not count it, or one agent's calls would turn
// the classifier off for every agent.
func requestRefused(err error) bool {
	var se *providerStatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}
