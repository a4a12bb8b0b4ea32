package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/memgate/memgate/audit"
	"github.com/memgate/memgate/memory"
)

// `sidecar audit verify|export`: the audit log's hash chain
// (memory/chain.go) checked by the running sidecar, exported as signed
// JSON Lines, and such a file checked offline.

func auditCommand(cl *cliEnv) *ffcli.Command {
	var file, keyPath string
	verify := adminCommand(cl, "audit verify", "audit verify [--file EXPORT [--audit-key KEY]] [--json]",
		"walk the audit chain and name the first event changed, removed or reordered; --file: check an export offline",
		func(fs *flag.FlagSet) {
			fs.StringVar(&file, "file", "", "check this export (from audit export) offline instead of asking the sidecar")
			fs.StringVar(&keyPath, "audit-key", "", "with --file: the key the export must be signed with (HMAC secret, or Ed25519 private or public key, PEM)")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("audit verify takes no arguments, got %q", args)
			}
			if file != "" {
				return verifyExportFile(cl.stdout, c.json, file, keyPath)
			}
			if keyPath != "" {
				return errors.New("--audit-key checks an export: give --file too")
			}
			var raw json.RawMessage
			if err := c.call(ctx, "GET", "/admin/v1/audit/verify", nil, &raw); err != nil {
				return err
			}
			var rep memory.ChainReport
			if err := json.Unmarshal(raw, &rep); err != nil {
				return err
			}
			if err := c.show(cl.stdout, raw, func(w io.Writer) error { return printChainReport(w, rep) }); err != nil {
				return err
			}
			if !rep.OK {
				return errChainBroken
			}
			return nil
		})
	var from, to, out, exportKey string
	export := adminCommand(cl, "audit export", "audit export [--from TIME] [--to TIME] [--audit-key KEY] [--out FILE]",
		"write the audit events between two times as JSON Lines, signed with --audit-key, for audit verify --file",
		func(fs *flag.FlagSet) {
			fs.StringVar(&from, "from", "", "first event time (RFC 3339 or YYYY-MM-DD, UTC); default: the chain's start")
			fs.StringVar(&to, "to", "", "events before this time (RFC 3339 or YYYY-MM-DD, UTC); default: up to now")
			fs.StringVar(&exportKey, "audit-key", "", "sign the export with this key file: an HMAC-SHA256 secret (32+ bytes) or an Ed25519 private key (PEM, PKCS #8)")
			fs.StringVar(&out, "out", "", "write to this file instead of standard output")
		},
		func(ctx context.Context, c *clientFlags, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("audit export takes no arguments, got %q", args)
			}
			q := url.Values{}
			for name, v := range map[string]string{"from": from, "to": to} {
				if v == "" {
					continue
				}
				t, err := parseWhen(v)
				if err != nil {
					return fmt.Errorf("--%s: %w", name, err)
				}
				q.Set(name, t.Format(time.RFC3339Nano))
			}
			var key *audit.Key
			if exportKey != "" {
				var err error
				if key, err = audit.LoadKey(exportKey); err != nil {
					return err
				}
			}
			return exportAudit(ctx, c, q, key, out, cl.stdout)
		})
	return &ffcli.Command{
		Name: "audit", ShortUsage: "sidecar audit verify|export", ShortHelp: "check and export the tamper-evident audit log",
		LongHelp: "Every audit event carries the hash of the one before it (a chain per store; one chain for a\n" +
			"PostgreSQL fleet, in commit order). verify walks it through the running sidecar and names the first\n" +
			"event changed, removed or reordered; export writes a stretch of it as JSON Lines, signed with\n" +
			"--audit-key, which verify --file checks without memgate's store.",
		Subcommands: []*ffcli.Command{verify, export},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

// errChainBroken makes the command exit non-zero after it printed why.
var errChainBroken = errors.New("the audit chain does not verify")

// parseWhen reads an RFC 3339 time or a date (midnight UTC).
func parseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want an RFC 3339 time or YYYY-MM-DD, got %q", s)
	}
	return t, nil
}

func printChainReport(w io.Writer, rep memory.ChainReport) error {
	if !rep.OK {
		_, err := fmt.Fprintf(w, "audit chain BROKEN after %d intact events: %s event %s (position %d)\n  %s\n",
			rep.Events, rep.Problem.Kind, rep.Problem.EventID, rep.Problem.Seq, rep.Problem.Detail)
		return err
	}
	_, err := fmt.Fprintf(w, "audit chain intact: %d events (%d with their text erased), the newest %s at position %d\n",
		rep.Events, rep.Erased, rep.Last.EventID, rep.Last.Seq)
	return err
}

// exportAudit downloads the export, signs it with key (if any) and writes
// it to out (a file, written whole or not at all) or stdout.
func exportAudit(ctx context.Context, c *clientFlags, q url.Values, key *audit.Key, out string, stdout io.Writer) error {
	body, err := c.download(ctx, "/admin/v1/audit/export?"+q.Encode(), "audit export")
	if err != nil {
		return err
	}
	defer body.Close()
	w, tmp := stdout, ""
	if out != "" {
		tmp = out + ".partial"
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		defer os.Remove(tmp) // after the rename: nothing
		defer f.Close()
		w = f
	}
	dst := w
	var signer *audit.Signer
	if key != nil {
		signer = audit.NewSigner(w, key)
		dst = signer
	}
	if _, err := io.Copy(dst, body); err != nil {
		return fmt.Errorf("audit export: %w", err)
	}
	if signer != nil {
		if err := signer.Close(); err != nil {
			return fmt.Errorf("audit export: sign: %w", err)
		}
	}
	if out == "" {
		return nil
	}
	if f, ok := w.(*os.File); ok {
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	// A cut stream (the sidecar stopped) has no end line: check before
	// keeping the file.
	if err := checkExportWhole(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// checkExportWhole refuses an export the sidecar did not finish.
func checkExportWhole(path string) error {
	rep, err := verifyFile(path, nil)
	if err != nil {
		return err
	}
	if !rep.Valid(false) {
		return fmt.Errorf("audit export: what the sidecar sent does not verify: %s%s", rep.Error, problemText(rep.Problem))
	}
	return nil
}

// verifyFile checks the export at path (its signature too, given a key).
func verifyFile(path string, key *audit.Key) (*audit.FileReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return audit.VerifyFile(f, key)
}

func problemText(p *memory.ChainProblem) string {
	if p == nil {
		return ""
	}
	return " " + p.Error()
}

func verifyExportFile(w io.Writer, asJSON bool, path, keyPath string) error {
	var key *audit.Key
	if keyPath != "" {
		var err error
		if key, err = audit.LoadKey(keyPath); err != nil {
			return err
		}
	}
	rep, err := verifyFile(path, key)
	if err != nil {
		return err
	}
	if asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
	} else {
		switch {
		case rep.Error != "":
			fmt.Fprintf(w, "%s: NOT VALID: %s\n", path, rep.Error)
		case !rep.OK:
			fmt.Fprintf(w, "%s: NOT VALID: %s event %s (position %d)\n  %s\n", path, rep.Problem.Kind, rep.Problem.EventID, rep.Problem.Seq, rep.Problem.Detail)
		default:
			sig := "not signed"
			switch {
			case rep.SignatureOK:
				sig = fmt.Sprintf("signature valid (%s, key %s)", rep.Alg, rep.KeyID)
			case rep.Signed:
				sig = fmt.Sprintf("signed (%s, key %s) but not checked: give --audit-key", rep.Alg, rep.KeyID)
			}
			fmt.Fprintf(w, "%s: intact: %d events from position %d to %d (%d with their text erased); %s\n",
				path, rep.Events, rep.Header.Start.Seq+1, rep.Last.Seq, rep.Erased, sig)
		}
	}
	if !rep.Valid(key != nil) {
		return errChainBroken
	}
	return nil
}
