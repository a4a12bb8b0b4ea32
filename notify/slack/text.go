package slack

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Slack's Block Kit limits, in characters (Slack counts UTF-16 code units,
// so an emoji counts two and a Chinese character one).
const (
	maxSectionText = 3000
	maxFieldText   = 2000
	maxHeaderText  = 150
	maxContextText = 2000 // below Slack's 3000, as one element of several
	maxBlocks      = 50
	maxFallback    = 300 // the notification text; Slack allows far more, phones show less
	maxButtonText  = 75
	maxModalTitle  = 24 // a modal's title, submit and close texts
	maxPlaceholder = 150
	maxLabelText   = 2000
	maxEphemeral   = 3000 // an answer to one user; Slack allows more, nobody reads it
)

// slackLen is a text's length as Slack counts it.
func slackLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// escape makes user text inert in mrkdwn: &, < and > are the only
// characters Slack parses for links, mentions (<!channel>) and dates.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// clip escapes s for mrkdwn and cuts it on a character boundary so the
// result, including a note of what was left out, is at most limit long.
// Long memories stay readable and every block stays within Slack's limits.
func clip(s string, limit int) string {
	if slackLen(s) <= limit && !strings.ContainsAny(s, "&<>") {
		return s
	}
	if esc := escape(s); slackLen(esc) <= limit {
		return esc
	}
	total := utf8.RuneCountInString(s)
	budget := limit - slackLen(clipNote(total))
	var b strings.Builder
	used, kept := 0, 0
	for _, r := range s {
		piece := escape(string(r))
		if used+slackLen(piece) > budget {
			break
		}
		b.WriteString(piece)
		used += slackLen(piece)
		kept++
	}
	return b.String() + clipNote(total-kept)
}

func clipNote(left int) string { return fmt.Sprintf("… (+%d characters)", left) }

// plainClip cuts plain text (header blocks, modal titles: no mrkdwn).
func plainClip(s string, limit int) string {
	if slackLen(s) <= limit {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		if used+utf16.RuneLen(r)+1 > limit {
			break
		}
		b.WriteRune(r)
		used += utf16.RuneLen(r)
	}
	return b.String() + "…"
}

// bound cuts text that is already mrkdwn (built from escaped parts) to
// limit, with a visible ellipsis; its parts are clipped on their own, so
// this only guards the sum. It never leaves half an escape (&amp;) or half
// a Slack token (<@U1>, <!date^…>) at the cut.
func bound(s string, limit int) string {
	if slackLen(s) <= limit {
		return s
	}
	body := strings.TrimSuffix(plainClip(s, limit), "…")
	if i := strings.LastIndexByte(body, '<'); i >= 0 && !strings.Contains(body[i:], ">") {
		body = body[:i]
	}
	if i := strings.LastIndexByte(body, '&'); i >= 0 && !strings.Contains(body[i:], ";") {
		body = body[:i]
	}
	return body + "…"
}

// oneLine folds whitespace so a text fits a list item or a notification.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// code shows an identifier as inline code. Ids cannot hold control
// characters; a backtick would only end the code span early, so it is
// replaced.
func code(s string) string {
	return "`" + strings.ReplaceAll(escape(s), "`", "'") + "`"
}

// slackDate renders t in each reader's own time zone, with a UTC fallback.
func slackDate(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

// maxUserID bounds what is shown as a Slack mention; Slack's ids are ~11.
const maxUserID = 32

// userRef names whoever decided: a Slack user id as a mention (Slack shows
// the name), anyone else (cli, admin, an operator's name) as text.
func userRef(by, route string) string {
	if route == routeSlack && by != "" && len(by) <= maxUserID {
		return "<@" + strings.ReplaceAll(escape(by), "|", "") + ">"
	}
	if by == "" {
		return "someone"
	}
	return "*" + clip(by, 100) + "*"
}
