package slack

import (
	"context"
	"log/slog"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// socketMode keeps a Socket Mode connection (apps.connections.open with the
// app-level token, then a websocket; outbound only) and handles the
// interactions that arrive on it until ctx ends. slack-go reconnects on its
// own; when it gives up (e.g. a revoked token) this loop tries again with a
// growing pause rather than leave reviewers without buttons.
func (s *Service) socketMode(ctx context.Context) {
	client := socketmode.New(s.api, socketmode.OptionLog(slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)))
	s.running.Add(1)
	go func() {
		defer s.running.Done()
		pause := time.Second
		for {
			err := client.RunContext(ctx)
			if ctx.Err() != nil {
				return
			}
			s.log.Error("Slack Socket Mode connection ended; reconnecting", "err", err, "in", pause.String())
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			pause = min(pause*2, 5*time.Minute)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case evt := <-client.Events:
			s.socketEvent(ctx, client, evt)
		}
	}
}

func (s *Service) socketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		s.log.Debug("connecting to Slack Socket Mode")
	case socketmode.EventTypeConnected:
		s.log.Info("connected to Slack Socket Mode")
	case socketmode.EventTypeConnectionError:
		s.log.Warn("Slack Socket Mode connection failed; retrying", "err", evt.Data)
	case socketmode.EventTypeInvalidAuth:
		s.log.Error("Slack refused the app-level token (MEMGATE_SLACK_APP_TOKEN)")
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if evt.Request != nil {
			// Acknowledge at once (Slack waits three seconds); the decision
			// and any answer to the clicker follow. An empty ack also closes
			// a submitted modal.
			if err := client.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil {
				s.log.Warn("acknowledging a Slack interaction", "err", err)
			}
		}
		if !ok {
			return
		}
		s.handling.Add(1)
		go func() {
			defer s.handling.Done()
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decisionTimeout)
			defer cancel()
			s.interact(hctx, cb)
		}()
	case socketmode.EventTypeEventsAPI, socketmode.EventTypeSlashCommand:
		if evt.Request != nil {
			_ = client.AckCtx(ctx, evt.Request.EnvelopeID, nil) // not used: acknowledged so Slack does not resend
		}
	}
}
