// Package secrets finds credentials and personal data in text, so that
// memgate never stores a credential and stores personal data only as its
// policy allows. [Scanner.FindSecrets] and [Scanner.FindPII] return the
// ids of the rules that matched, never the matched text.
//
// # What is detected
//
// Every text is checked by two sets of rules:
//
//   - gitleaks v8's default rules (about 220: cloud provider keys such as
//     AWS AKIA/ASIA ids and GCP AIza keys, GitHub ghp_ and github_pat_,
//     GitLab glpat-, Stripe sk_live_/rk_live_, OpenAI keys with the
//     T3BlbkFJ marker, Anthropic sk-ant-api03 keys, Slack tokens and
//     webhooks, JWTs, PEM private keys, and the generic "api_key = ..."
//     assignment). Their ids are gitleaks' (aws-access-token, github-pat,
//     generic-api-key, ...).
//   - this package's own rules, for what gitleaks misses:
//     password-assignment (English prose and config: "The SMTP password
//     for the mailer is Orchid-7741!", "db_password = ...", "API key:
//     ..."), password-assignment-zh (Chinese: "wifi 密码是 ...",
//     "数据库口令：...", "腾讯云 SecretKey 是 ..."), password-inline (a
//     password or PIN right after its keyword: "password RX@Le5u...",
//     "门禁密码 728129"), credential-pair (a login given as user and
//     password together: "the admin login for the NAS is backup /
//     Tq8#mZ2pLx", "creds: deploy:Hk7pq91xZ", "user mlopez, password
//     orchid77", "用户名 admin 密码 orchid77", "账密 root/hk7pq91xz"),
//     key-inline (a key right after its keyword, with no verb: "Twilio
//     auth token 4c8e1f0a...", "API key Xk29vLq8...", "应用密钥cOFrin..."),
//     password-clause and password-clause-zh (the value in a clause after
//     the one naming the keyword, in the same sentence: "changed the NAS
//     password this morning, it's now ...", "the wifi password? it is
//     ...", "新的密码，现在是 ..."), credential-url
//     (redis://user:pass@host and other schemes), basic-auth-header,
//     cli-password (mysql -pSECRET, sshpass -p SECRET, redis-cli -a),
//     openai-project-key and sk-prefixed-key (OpenAI-style keys without
//     the marker), anthropic-key (other lengths and kinds),
//     aws-secret-access-key (the 40-character secret near an access key
//     id or named as such), azure-connection-string-key (AccountKey= and
//     SharedAccessKey=), private-key-block (a PEM header followed by key
//     material, without the END line), bearer-token and
//     tencent-cloud-secret-id (AKID...), and prefixed-key (key material
//     after a vendor's prefix such as ghp_, sk_test_, pk_live_ or xoxb-,
//     whole or cut short, as half of a key split in two is).
//
// Example and test keys are keys: a memory is not a code repository.
// gitleaks lets through keys that read as examples (AWS's
// AKIAIOSFODNN7EXAMPLE, a list of published GCP keys, values holding the
// alphabet or words such as "example", "sample" or "mock"); this package
// removes those allowlist entries (examples.go). Stripe's sk_test_ and
// pk_test_ keys count. What has no key material does not: <your-api-key>,
// YOUR_API_KEY, ${TOKEN}, xxxxxxxx, sk-..., ghp_YOUR_TOKEN_HERE.
//
// An assignment counts only if its value looks like a credential: at
// least 6 characters with a digit, a symbol or mixed case, and not a
// placeholder (<password>, ${PASS}, ****), a date or version, a path, an
// e-mail address, a code reference (os.environ[...]) or a password
// manager's name. Words between the keyword and the verb such as "reset",
// "policy" or "length" (策略, 长度, 需要), or a subordinate clause
// ("because", "if"), mark a sentence about a password rather than one
// giving it. So "the VPN password is stored in 1Password", "password
// reset emails go out at 9" and "密码需要每90天修改一次" are not findings.
//
// Without a verb the value has to show more. The password half of a pair
// needs 8 characters (a slash also joins alternatives: "SSO/OAuth2"), a
// user that is no field name, version or acronym ("username/password2",
// "v1.2/v1.3beta"), and no page or flow named before it ("the login page
// is /admin / settings"). A key after its bare keyword needs 16
// characters with a run of 12 letters and digits that switches between
// them at least four times or has two inner capitals: hex counts (a
// 32-digit auth token), "token bucket size 64", "ttl_seconds_3600" and
// "records2024summary" do not, nor do tokens that page or order requests
// ("--next-token ...", "page token ...", "change token ...") or an
// Ethereum address after "token". A value after "it's now" must follow
// the keyword within the sentence, with no blocker or subordinate clause
// between: "reset your password, it's now required to be 12 chars" and
// "the token is long because it is base64url encoded" are not findings.
//
// # Forms scanned
//
// Each text is scanned as written and folded (NFKC, with format
// characters, variation selectors and other default-ignorable characters
// removed), so that a zero-width space inside a key or full-width letters
// do not hide it. Both are also scanned with spaced-out keys joined
// ("AKIA ULQU YFHO ...", "s k _ l i v e _ ...", "AKIA-ULQU-YFHO-...", one
// group a line, and pieces of any length after a known key prefix:
// "ghp_KncswoQ8Q XsLVr7K0Y ...", a token wrapped over lines),
// and with base64 (standard or URL alphabet) and hex tokens of at least 16
// characters decoded in place when they decode to mostly printable text; a
// rule that matches only then is reported as "decoded-base64:<rule>" or
// "decoded-hex:<rule>". Commit SHAs, UUIDs and checksums decode to binary
// and are left alone. These derived forms are built paragraph by paragraph
// (paragraphs are separated by a blank line, as memory.ScanRecord joins a
// record's fields), and only the paragraphs a form changes are scanned
// again, together.
//
// # Cost
//
// gitleaks' detector runs all ~220 rules whose keywords occur, and short
// keywords ("key", "ey", "sk") occur in most prose: 20-30 µs per short
// text, mostly in its generic rule. A gate (gate.go) works out which rules
// cannot match: from each rule's regular expression it derives strings
// every match must contain and a cheap anchored check where a match could
// start. The rules left, usually none, run alone, each in a detector of its
// own; the full detector decides whenever that could differ (a generic
// finding next to another rule's). Tests compare the result with the full
// detector's on every test text, on strings generated from every rule and
// on random text.
//
// This package's rules run at anchors (a keyword's occurrences), and the
// rules for prose first look for what every match needs besides the
// keyword (a slash or colon for a pair, a password keyword after a user,
// 12 letters and digits for a key, "it's" or a Chinese clause break), so
// that common words ("user", "token") cost a search, not an expression:
// together about 0.7 µs per short text and 0.1-0.25 ms per 16 KB.
//
// # Known limits
//
//   - A password given without a keyword ("it's Orchid-7741!"), or in a
//     sentence after the one naming it ("I changed the wifi password. It's
//     now ..."), or with a keyword we do not know is not found, nor is one
//     that looks like a word: letters only and at most one case change
//     ("changeme", "correct-horse-battery", a pair "admin / admin").
//   - Values shorter than 6 characters (a 4-digit PIN) are not reported;
//     nor is the password half of a pair shorter than 8, or a key after
//     its bare keyword shorter than 16 or without a digit (a key of
//     letters only, "token cOFrinLzJmJtFWnrlYQw...").
//   - A keyword and its value more than five words apart (60 characters
//     for "..., it's now <value>"), or across a line break, are not
//     linked. A pair needs its keyword (login, creds, 账号, ...) or a user
//     keyword before it: "alice / Orchid-7741!" alone is not found, nor is
//     a pair whose halves are separated by anything but a slash or a
//     colon, or a user name with characters other than letters, digits
//     and ._@+- (张伟).
//   - A bare "key" is no keyword ("cache key", "primary key"), so a key
//     after it alone ("Mailgun key 3ax6xnjp29...") is not found unless
//     gitleaks knows its format.
//   - Look-alike letters from other scripts (Cyrillic а for Latin a) are
//     not folded, so a key spelled with them is missed.
//   - Keys split into pieces of unequal length or of more than 8
//     characters are joined only after a known key prefix (keyPrefixes),
//     and only where each piece has a digit or an inner capital; a key
//     is not joined across a blank line (or across two of a record's
//     fields). The half of a key cut in two that carries the prefix is
//     found (prefixed-key); the other half alone is a random string.
//   - Encodings other than base64 and hex (URL encoding, gzip, base32,
//     ROT13), and encodings nested more than one level, are not decoded.
//   - The other way round, after a keyword and a verb any word with a
//     digit or a symbol counts ("the token is v2-format", "the token,
//     it's now GPT4-turbo" and "credentials: client_id/secret_v2x" are
//     reported), and after a key keyword any random-looking string of 16
//     characters is a key (a UUID after "session token" is reported,
//     one after "request id" is not).
//   - gitleaks' rules for provider formats are taken as they are: a
//     format it lacks and we do not add is missed, and its generic rule
//     can flag a high-entropy value after words like "key" or "token".
//   - A derived form is scanned a paragraph at a time, so a secret that
//     folding, joining or decoding would reveal only across a blank line
//     is missed.
//   - Cost grows with length, and most when gitleaks' generic rule could
//     match somewhere (as in "auth: enabled_for_all_users"): it then runs
//     over the whole text, 10-20 ms for 16 KB.
//
// # Personal data
//
// [Scanner.FindPII] finds, by checksum and structure rather than by
// digits alone: payment card numbers (13 to 19 digits, together or in
// groups, a Visa, Mastercard, American Express, Discover, JCB, UnionPay
// or Diners Club prefix and length, and the Luhn check; test numbers such
// as 4111 1111 1111 1111 count), US Social Security numbers (AAA-GG-SSSS
// or AAA GG SSSS, or nine digits after "SSN" or "social security";
// not area 000, 666 or 9xx, group 00 or serial 0000), Chinese resident
// ids (18 characters: province, a birth date from 1900 to this year, the
// ISO 7064 MOD 11-2 check digit) and IBANs (a country's length from the
// IBAN registry and the mod-97 check). Phone, order and tracking numbers,
// timestamps, versions, hashes and ids fail these checks (pii_test.go
// keeps a table of them). It scans the same forms as FindSecrets but the
// joined ones, in well under a microsecond for a short text.
//
// Known limits: a number inside a word or an identifier (x4111...,
// slot_4111...) is not read as one; a card number grouped other than in
// fours first, lowercase IBANs, SSNs written as bare digits without a
// word naming them, and the 15-digit first-generation Chinese ids (no
// check digit) are not found; about 1 in 10 numbers of a card's shape
// passes the Luhn check, so an order number that happens to be one is
// reported.
package secrets
