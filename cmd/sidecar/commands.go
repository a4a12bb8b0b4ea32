package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/memory"
	"github.com/memgate/memgate/proxy"
)

// adminCommand builds a subcommand that calls the admin API; exec gets the
// parsed client flags and the positional arguments.
func adminCommand(cl *cliEnv, name, usage, help string, extra func(*flag.FlagSet),
	exec func(ctx context.Context, c *clientFlags, args []string) error) *ffcli.Command {
	var c clientFlags
	fs := flag.NewFlagSet("sidecar "+name, flag.ContinueOnError)
	fs.SetOutput(cl.stderr)
	c.register(fs)
	if extra != nil {
		extra(fs)
	}
	return &ffcli.Command{
		Name: strings.Fields(name)[len(strings.Fields(name))-1], ShortUsage: "sidecar " + usage, ShortHelp: help,
		FlagSet: fs, Options: envOptions,
		Exec: func(ctx context.Context, args []string) error {
			args, err := interspersed(fs, args)
			if err != nil {
				return err
			}
			return exec(ctx, &c, args)
		},
	}
}

// interspersed parses flags that follow positional arguments, so that
// "explain <id> --json" works as the usage lines write it (the flag
// package stops at the first argument that is not a flag).
func interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		switch a := args[0]; {
		case a == "--":
			return append(pos, args[1:]...), nil
		case strings.HasPrefix(a, "-") && a != "-":
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			args = fs.Args()
		default:
			pos, args = append(pos, a), args[1:]
		}
	}
	return pos, nil
}

// printTable prints rows under header, aligned in columns.
func printTable[T any](w io.Writer, header string, rows []T, row func(tw io.Writer, r T)) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		row(tw, r)
	}
	return tw.Flush()
}

// showByID is the exec of a command that takes one id (what names it) and
// shows what GET path(id) answers.
func showByID[T any](cl *cliEnv, what string, path func(id string) string, text func(io.Writer, T) error) func(context.Context, *clientFlags, []string) error {
	return func(ctx context.Context, c *clientFlags, args []string) error {
		id, err := oneID(args, what)
		if err != nil {
			return err
		}
		return callShow(ctx, c, cl.stdout, "GET", path(id), nil, text)
	}
}

func oneID(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want exactly one %s, got %d arguments", what, len(args))
	}
	return url.PathEscape(args[0]), nil
}

func reviewCommand(cl *cliEnv) *ffcli.Command {
	var shadow bool
	var after string
	var limit int
	list := adminCommand(cl, "review list", "review list [--shadow [--after EVENT-ID] [--limit N]] [--json]",
		"list parked writes, oldest first; --shadow: the writes shadow mode applied that policy would have parked or rejected, newest first",
		func(fs *flag.FlagSet) {
			fs.BoolVar(&shadow, "shadow", false, "list what policy would have parked or rejected while it was shadowed (--policy-mode shadow, or rules shadowed in the policy's data)")
			fs.StringVar(&after, "after", "", "with --shadow: continue after this event id (the more: line of the previous page)")
			fs.IntVar(&limit, "limit", 100, "with --shadow: writes per page (1–10000)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("review list takes no arguments, got %q", args)
			}
			if shadow {
				return shadowList(ctx, cl, c, after, limit)
			}
			// The queue comes a page at a time; the list shows all of it.
			all := struct {
				Reviews []json.RawMessage `json:"reviews"`
				Count   int               `json:"count"`
			}{Reviews: []json.RawMessage{}}
			for next := ""; ; {
				var page struct {
					Reviews []json.RawMessage `json:"reviews"`
					Next    string            `json:"next"`
				}
				if err := c.call(ctx, "GET", "/admin/v1/reviews?"+url.Values{"after": {next}, "limit": {"1000"}}.Encode(), nil, &page); err != nil {
					return err
				}
				all.Reviews = append(all.Reviews, page.Reviews...)
				if page.Next == "" || page.Next == next {
					break
				}
				next = page.Next
			}
			all.Count = len(all.Reviews)
			raw, err := json.Marshal(all)
			if err != nil {
				return err
			}
			return showAs(c, cl.stdout, raw, func(w io.Writer, body struct{ Reviews []memory.ReviewItem }) error {
				if len(body.Reviews) == 0 {
					fmt.Fprintln(w, "No writes wait for review.")
					return nil
				}
				return printTable(w, "ID\tWAITING\tRISK\tLAYER\tSLOT\tNEW\tCURRENT", body.Reviews, func(tw io.Writer, it memory.ReviewItem) {
					r := it.Record
					cur := "(empty)"
					if it.Current != nil {
						cur = clip(it.Current.Summary, 40)
					}
					flags := ""
					if it.Stale {
						flags = " [stale]"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, it.Waiting, r.RiskLevel, r.Layer,
						slotName(r), clip(r.Summary, 40)+flags, cur)
				})
			})
		})
	show := adminCommand(cl, "review show", "review show <id> [--json]", "show a parked write and what it would replace", nil,
		showByID(cl, "review id", func(id string) string { return "/admin/v1/reviews/" + id }, func(w io.Writer, it memory.ReviewItem) error {
			printRecord(w, it.Record)
			fmt.Fprintf(w, "Would replace:  %s\n", describeOrEmpty(it.Current))
			if it.Stale {
				fmt.Fprintln(w, "Stale:          the slot changed since this write was parked")
			}
			if len(it.Conflicting) > 0 {
				fmt.Fprintf(w, "Conflicts with: %s (other pending writes to the slot)\n", strings.Join(it.Conflicting, ", "))
			}
			return nil
		}))
	var mode, note, by string
	approve := adminCommand(cl, "review approve", "review approve [--mode override|append] [--note text] <id>",
		"approve a parked write (compare-and-swap against the version it meant to replace)",
		func(fs *flag.FlagSet) {
			fs.StringVar(&mode, "mode", "override", "override (replace the active version) or append (a slot of its own)")
			fs.StringVar(&note, "note", "", "note recorded with the decision")
			fs.StringVar(&by, "by", "", "reviewer name recorded with the decision (default: cli)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			return decide(ctx, cl, c, args, "approve", proxy.DecisionRequest{Mode: memory.ReviewMode(mode), Note: note, By: orDefault(by, "cli")})
		})
	var reason, rby string
	reject := adminCommand(cl, "review reject", "review reject [--reason text] <id>", "reject a parked write",
		func(fs *flag.FlagSet) {
			fs.StringVar(&reason, "reason", "", "why it was rejected")
			fs.StringVar(&rby, "by", "", "reviewer name recorded with the decision (default: cli)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			return decide(ctx, cl, c, args, "reject", proxy.DecisionRequest{Reason: reason, By: orDefault(rby, "cli")})
		})
	return &ffcli.Command{
		Name: "review", ShortUsage: "sidecar review list|show|approve|reject", ShortHelp: "work the review queue",
		Subcommands: []*ffcli.Command{list, show, approve, reject},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

// getPage gets a page of a paged admin route: ?after=&limit=.
func (c *clientFlags) getPage(ctx context.Context, path, after string, limit int) (json.RawMessage, error) {
	q := url.Values{"limit": {fmt.Sprint(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	var raw json.RawMessage
	err := c.call(ctx, "GET", path+"?"+q.Encode(), nil, &raw)
	return raw, err
}

// shadowList prints a page of GET /admin/v1/shadow, with the mode policy
// runs in now.
func shadowList(ctx context.Context, cl *cliEnv, c *clientFlags, after string, limit int) error {
	raw, err := c.getPage(ctx, "/admin/v1/shadow", after, limit)
	if err != nil {
		return err
	}
	var mode proxy.PolicyModeRequest
	if err := c.call(ctx, "GET", "/admin/v1/policy/mode", nil, &mode); err != nil {
		return err
	}
	return showAs(c, cl.stdout, raw, func(w io.Writer, page memory.ShadowPage) error {
		fmt.Fprintf(w, "Policy mode: %s\n", mode.Mode)
		if len(page.Items) == 0 {
			fmt.Fprintln(w, "No write was let through that policy would have parked or rejected.")
			return nil
		}
		if err := printTable(w, "AT\tRECORD\tWOULD\tDID\tRULES\tSLOT\tSUMMARY\tSTATUS", page.Items, func(tw io.Writer, it *memory.ShadowItem) {
			slot := slotName(&memory.Record{SubjectID: it.SubjectID, FactType: it.FactType})
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.At.Format(time.RFC3339), it.RecordID, it.Would, it.Did,
				orDefault(strings.Join(it.Rules, ","), "-"), slot, clip(it.Summary, 40), it.Status)
		}); err != nil {
			return err
		}
		if page.Next != "" {
			fmt.Fprintf(w, "more: sidecar review list --shadow --after %s\n", page.Next)
		}
		return nil
	})
}

// describeShadow says what a shadowed decision's write went through
// instead of what policy said; "" when nothing was shadowed.
func describeShadow(d *memory.Decision) string {
	if d == nil || d.Shadow == nil {
		return ""
	}
	would := map[memory.Action]string{memory.ActionReview: "parked", memory.ActionReject: "rejected"}[d.Action]
	did := map[memory.Action]string{memory.ActionApply: "applied", memory.ActionReview: "parked"}[d.Shadow.Action]
	why := "in shadow mode"
	if d.Shadow.By == memory.ShadowByRule {
		why = "because the policy's data shadows its rules"
	}
	return fmt.Sprintf("%s %s: policy would have %s it (rules %s)", did, why, orDefault(would, string(d.Action)),
		orDefault(strings.Join(d.Shadow.Rules, ", "), "none named"))
}

func decide(ctx context.Context, cl *cliEnv, c *clientFlags, args []string, verb string, req proxy.DecisionRequest) error {
	id, err := oneID(args, "review id")
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.call(ctx, "POST", "/admin/v1/reviews/"+id+"/"+verb, req, &raw); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == memory.ESTALE {
			return fmt.Errorf("%w\nRun `sidecar review show %s` to see the slot's current version, then decide again", err, args[0])
		}
		return err
	}
	return showAs(c, cl.stdout, raw, func(w io.Writer, r memory.Record) error {
		fmt.Fprintf(w, "%s: %s is now %s\n", verb, r.ID, r.Status)
		return nil
	})
}

func explainCommand(cl *cliEnv) *ffcli.Command {
	return adminCommand(cl, "explain", "explain <id> [--json]", "why is this memory active: who, what it replaced, evidence, affects, rollback point", nil,
		showByID(cl, "memory id", func(id string) string { return "/admin/v1/memories/" + id + "/explain" }, func(w io.Writer, ex memory.Explanation) error {
			printRecord(w, ex.Record)
			fmt.Fprintf(w, "Who:            %s\n", describeActor(ex.Who))
			fmt.Fprintf(w, "Replaced:       %s\n", describeOrEmpty(ex.Replaced))
			fmt.Fprintf(w, "Evidence:       %s\n", orDefault(strings.TrimSpace(ex.Evidence.Excerpt+" "+ex.Evidence.SourceRef), "(none given)"))
			fmt.Fprintf(w, "Affects:        %s\n", orDefault(strings.Join(ex.Affects, ", "), "(nothing named)"))
			if ex.RollbackPoint != nil {
				fmt.Fprintf(w, "Rollback point: %s (restores %s)\n", ex.RollbackPoint.ID, orDefault(ex.RollbackPoint.Replaced, "an empty slot"))
			} else {
				fmt.Fprintln(w, "Rollback point: none (never applied)")
			}
			for _, r := range ex.Rules {
				fmt.Fprintf(w, "Rule:           %s: %s\n", r.Rule, r.Message)
			}
			if s := describeShadow(ex.Record.Decision); s != "" {
				fmt.Fprintf(w, "Shadow:         %s\n", s)
			}
			if m := ex.Record.FactMatch; m != nil {
				// The free-text memory the fact matcher found: the one a
				// possible conflict stands beside, or an update replaced.
				fmt.Fprintf(w, "Fact match:     %s of memory %s (version %s): %s\n", m.Kind, m.SlotID, m.RecordID, m.Reason)
			}
			if ex.Review != nil {
				fmt.Fprintf(w, "Review:         %s by %s via %s at %s %s\n", ex.Review.Outcome, ex.Review.By, ex.Review.Route,
					ex.Review.At.Format(time.RFC3339), ex.Review.Note)
			}
			if ex.SupersededBy != nil {
				fmt.Fprintf(w, "Superseded by:  %s\n", describeOrEmpty(ex.SupersededBy))
			}
			for _, ev := range ex.Events {
				mark := ""
				if memory.IsShadowed(ev) {
					mark = "[shadow]"
				}
				fmt.Fprintf(w, "  %s  %-11s %s %s%s\n", ev.At.Format(time.RFC3339), ev.Type, ev.By, ev.Reason, mark)
			}
			return nil
		}))
}

func historyCommand(cl *cliEnv) *ffcli.Command {
	return adminCommand(cl, "history", "history <memory-or-record-id> [--json]", "list every version of a memory's slot", nil,
		showByID(cl, "memory id", func(id string) string { return "/admin/v1/memories/" + id + "/history" }, func(w io.Writer, body struct {
			SlotID   string
			Versions []*memory.Record
		}) error {
			return printTable(w, "ID\tSTATUS\tCREATED\tSUMMARY", body.Versions, func(tw io.Writer, r *memory.Record) {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Status, r.CreatedAt.Format(time.RFC3339), clip(r.Summary, 60))
			})
		}))
}

func rollbackCommand(cl *cliEnv) *ffcli.Command {
	var cascade bool
	var reason string
	return adminCommand(cl, "rollback", "rollback [--cascade] [--reason text] <id>", "undo a memory: its slot returns to its rollback point",
		func(fs *flag.FlagSet) {
			fs.BoolVar(&cascade, "cascade", false, "also undo every later version of the slot, newest first")
			fs.StringVar(&reason, "reason", "", "why (optional; recorded in the audit log)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			id, err := oneID(args, "memory id")
			if err != nil {
				return err
			}
			return callShow(ctx, c, cl.stdout, "POST", "/admin/v1/memories/"+id+"/rollback", proxy.RollbackRequest{Cascade: cascade, Reason: reason, By: "cli"}, func(w io.Writer, res memory.RollbackResult) error {
				for _, r := range res.RolledBack {
					fmt.Fprintf(w, "rolled back %s (%s)\n", r.ID, clip(r.Summary, 60))
				}
				fmt.Fprintf(w, "active now: %s\n", describeOrEmpty(res.Restored))
				return nil
			})
		})
}

func quarantineCommand(cl *cliEnv) *ffcli.Command {
	var run, actor, reason string
	return adminCommand(cl, "quarantine", "quarantine --run ID | --actor ID [--reason text]", "undo everything one run/session or actor wrote",
		func(fs *flag.FlagSet) {
			fs.StringVar(&run, "run", "", "run or session id")
			fs.StringVar(&actor, "actor", "", "agent or user id")
			fs.StringVar(&reason, "reason", "", "why (optional; recorded in the audit log)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 || (run == "") == (actor == "") {
				return errors.New("give exactly one of --run or --actor")
			}
			return bulk(ctx, cl, c, "/admin/v1/quarantine", proxy.QuarantineRequest{RunID: run, ActorID: actor, Reason: reason, By: "cli"})
		})
}

func restoreCommand(cl *cliEnv) *ffcli.Command {
	var subject, at, reason string
	return adminCommand(cl, "restore", "restore --subject ID --at RFC3339 [--reason text]",
		"undo every version of a subject applied after a time (versions rolled back since stay rolled back, and are listed)",
		func(fs *flag.FlagSet) {
			fs.StringVar(&subject, "subject", "", "subject id")
			fs.StringVar(&at, "at", "", "point in time, RFC 3339 (e.g. 2026-12-02T10:00:00Z)")
			fs.StringVar(&reason, "reason", "", "why (optional; recorded in the audit log)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			t, err := time.Parse(time.RFC3339, at)
			if err != nil || subject == "" || len(args) > 0 {
				return fmt.Errorf("give --subject and --at as RFC 3339 time (%v)", err)
			}
			return bulk(ctx, cl, c, "/admin/v1/restore", proxy.RestoreRequest{SubjectID: subject, At: t, Reason: reason, By: "cli"})
		})
}

func bulk(ctx context.Context, cl *cliEnv, c *clientFlags, path string, req any) error {
	return callShow(ctx, c, cl.stdout, "POST", path, req, func(w io.Writer, res memory.BulkResult) error {
		fmt.Fprintf(w, "rolled back %d, retracted %d, rejected %d pending (%d slots)\n", len(res.RolledBack), len(res.Retracted), len(res.Rejected), res.Slots)
		if len(res.KeptRolledBack) > 0 {
			fmt.Fprintf(w, "kept rolled back: %s (active at that time, rolled back since; a restore only undoes, it never re-applies what was undone: write it again to re-apply it)\n",
				strings.Join(res.KeptRolledBack, ", "))
		}
		return nil
	})
}

func printRecord(w io.Writer, r *memory.Record) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "Memory:         %s (%s)\n", r.ID, r.Status)
	fmt.Fprintf(w, "Slot:           %s  %s\n", r.SlotID, slotName(r))
	fmt.Fprintf(w, "Layer:          %s   risk %s  %s\n", r.Layer, orDefault(string(r.RiskLevel), "-"), strings.Join(r.Categories, ","))
	fmt.Fprintf(w, "Summary:        %s\n", r.Summary)
	if len(r.Value) > 0 {
		fmt.Fprintf(w, "Value:          %s\n", r.Value)
	}
	fmt.Fprintf(w, "Source:         %s, created %s\n", r.CandidateSource, r.CreatedAt.Format(time.RFC3339))
}

func slotName(r *memory.Record) string {
	if r.FactType == "" {
		return r.SubjectID
	}
	return r.SubjectID + "/" + r.FactType
}

func describeOrEmpty(r *memory.Record) string {
	if r == nil {
		return "(nothing: the slot was empty)"
	}
	return fmt.Sprintf("%s %q (%s)", r.ID, clip(r.Summary, 80), r.Status)
}

func describeActor(a memory.Actor) string {
	var parts []string
	for _, p := range [][2]string{{"agent", a.AgentID}, {"user", a.UserID}, {"run", a.RunID}, {"session", a.SessionID},
		{"via", a.Dialect}, {"from", a.RemoteAddr}, {"client", a.Client}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	return orDefault(strings.Join(parts, ", "), "(unknown)")
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func eventsCommand(cl *cliEnv) *ffcli.Command {
	var after string
	var limit int
	return adminCommand(cl, "events", "events [--after EVENT-ID] [--limit N] [--json]",
		"read the audit log, oldest first, a page at a time",
		func(fs *flag.FlagSet) {
			fs.StringVar(&after, "after", "", "start after this event id (the NEXT a previous page printed)")
			fs.IntVar(&limit, "limit", 100, "events per page (1–10000)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("events takes no arguments, got %q", args)
			}
			raw, err := c.getPage(ctx, "/admin/v1/events", after, limit)
			if err != nil {
				return err
			}
			return showAs(c, cl.stdout, raw, func(w io.Writer, page memory.EventPage) error {
				if len(page.Events) == 0 {
					fmt.Fprintln(w, "No events.")
					return nil
				}
				if err := printTable(w, "EVENT\tAT\tTYPE\tRECORD\tSUBJECT\tBY\tREASON", page.Events, func(tw io.Writer, e *memory.Event) {
					by := e.By
					if by == "" && e.Actor != nil {
						by = describeActor(*e.Actor)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.At.Format(time.RFC3339), e.Type, e.RecordID,
						e.SubjectID, clip(by, 30), clip(e.Reason, 50))
				}); err != nil {
					return err
				}
				if page.Next != "" {
					fmt.Fprintf(w, "more: sidecar events --after %s\n", page.Next)
				}
				return nil
			})
		})
}
