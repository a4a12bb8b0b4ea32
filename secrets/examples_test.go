package secrets

import (
	"slices"
	"testing"
)

// exampleKeys are keys published as examples, test keys and keys written
// in pieces: a memory is not a code repository, and each is a credential.
// want, if set, must be among the ids.
var exampleKeys = []struct{ name, text, want string }{
	{"AWS's documented key id", "AKIAIOSFODNN7EXAMPLE", "aws-access-token"},
	{"AWS's documented key pair", "aws creds: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"},
	{"AWS's documented secret, named", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"},
	{"AWS's documented secret in prose", "the AWS secret is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"},
	{"Stripe secret test key", "stripe key sk_test_4eC39HqLyjWDarjtT1zdp7dc", "stripe-access-token"},
	{"Stripe publishable test key", "pk_test_TYooMQauvdEDq54NiTphI7jx", "prefixed-key"},
	{"Stripe publishable live key", "publishable key pk_live_51Hx2abCDefGHijKLmnOPqrSTuvWXyz0123456789", "prefixed-key"},
	{"a key made of the alphabet", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-pat"},
	{"a key marked EXAMPLE", "ghp_EXAMPLEabcdefghijklmnopqrstuvwxyz0123", "github-pat"},
	{"a published GCP key", "maps key AIzaSyabcdefghijklmnopqrstuvwxyz1234567", "gcp-api-key"},
	{"an example key after api_key", "api_key = example_9f8e7d6c5b4a3f2e1d0c", "generic-api-key"},
	{"a mock token", "auth_token = mockQ8x7Zp2Lr9Vb", "generic-api-key"},
	{"an example password with key material", "the admin password is YourStrongPassw0rd!", "password-assignment"},
	{"an example password after my_", "db_password = my-Secret-2024!", "password-assignment"},
	{"a documentation password in a URL", "postgres://app:pass123@db.internal:5432/app", "credential-url"},

	// Split by spaces, in groups of one length or not.
	{"GitHub token in groups of four", "ghp_ abcd efgh ijkl mnop qrst uvwx yz01 2345 6789", "github-pat"},
	{"GitHub token in groups of nine", "令牌拆成几段：ghp_KncswoQ8Q XsLVr7K0Y hzoBjQWxF yi0lD9KdM", "github-pat"},
	{"GitLab token after Chinese punctuation", "拼起来：glpat- YBisR fOUXN qbW_z 4Vaka", "gitlab-pat"},
	{"OpenAI key in groups", "sk-proj- b0znHuZT ZNi66EF9 kp1CV5o3 0Pn2CaZN jRTd3SNV V7BvUO4m", "openai-project-key"},
	// Split by line breaks.
	{"GitHub token wrapped over lines", "ghp_gy902Hmr\nHx7kUeUjeYee2FOd\nvEICn8jaLh4P", "github-pat"},
	{"GitHub token one group a line", "ghp_\ngy90\n2Hmr\nHx7k\nUeUj\neYee\n2FOd\nvEIC\nn8ja\nLh4P", "github-pat"},
	{"AWS key id one group a line", "AKIA\r\nULQU\r\nYFHO\r\nYLIW\r\n5PKA", "aws-access-token"},
	// Cut in two: the half with the prefix is a key.
	{"the first half of a GitHub token", "first half: ghp_gy902HmrHx7kUeUjeYee", "prefixed-key"},
	{"the first half of a Stripe key", "sk_live_lqiJjPU6Jnz4", "prefixed-key"},
}

// placeholders stand for a key and hold no key material: none is found.
var placeholders = []string{
	"<your-api-key>",
	"api_key = YOUR_API_KEY",
	"api_key = your-api-key-here",
	"OPENAI_API_KEY=<your key>",
	"api_key = xxxxxxxx",
	"api key: sk-...",
	"token: ghp_YOUR_TOKEN_HERE",
	"stripe: sk_test_YOUR_SECRET_KEY, pk_test_xxxxxxxxxxxxxxxxxxxxxxxx",
	"sk_live_**************** (masked)",
	"password: <password>",
	"password = ${DB_PASSWORD}",
	"the password is YourPasswordHere",
	"postgres://user:password@localhost:5432/app",
	"AKIAXXXXXXXXXXXXXXXX",
	"ghp_ tokens are classic personal access tokens; fine-grained ones start with github_pat_",
	"set npm_config_cache2024abc in CI",
	"ASIA PACIFIC 2024 REGION sales",
}

func TestExampleKeysAreKeys(t *testing.T) {
	s := newScanner(t)
	for _, c := range exampleKeys {
		got := s.FindSecrets(c.text)
		if !slices.Contains(got, c.want) {
			t.Errorf("%s: %q: got %v, want %s among them", c.name, c.text, got, c.want)
		}
	}
}

func TestPlaceholdersAreNotKeys(t *testing.T) {
	wantNothing(t, "placeholder found as", newScanner(t).FindSecrets, placeholders)
}

func TestShortGap(t *testing.T) {
	for _, tc := range []struct {
		gap string
		ok  bool
	}{
		{" ", true}, {"   ", true}, {"\t", true}, {"\n", true}, {"\r\n", true}, {" \n ", true},
		{"    ", false}, {"\n\n", false}, {"\r\n\r\n", false}, {"\r", false}, {"\n    ", false},
	} {
		if got := shortGap(tc.gap); got != tc.ok {
			t.Errorf("shortGap(%q) = %v, want %v", tc.gap, got, tc.ok)
		}
	}
}

func TestJoinAfterPrefixes(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"ghp_ 1a2B 3c4D 5e6F 7g8H", "ghp_1a2B3c4D5e6F7g8H"},
		{"key ghp_KncswoQ8Q XsLVr7K0Y hzoBjQWxF yi0lD9KdM, thanks", "key ghp_KncswoQ8QXsLVr7K0YhzoBjQWxFyi0lD9KdM, thanks"},
		{"ghp_abc1\nDEF2\nand then words", "ghp_abc1DEF2\nand then words"},
		{"ghp_ abcd efgh ijkl mnop", "ghp_abcdefghijklmnop"},                          // one length: a run
		{"glpat-AZ6Zh7 user@example.com", ""},                                         // stops before an address
		{"ghp_ tokens are classic tokens", ""},                                        // words
		{"the ghp_ prefix", ""},                                                       // a word after it
		{"xghp_ 1a2B 3c4D", ""},                                                       // not at a token's start
		{"ghp_abcd\n\nEFG1", ""},                                                      // not across a blank line
		{"AKIA ULQU YFHO YLIW 5PKA", "AKIAULQUYFHOYLIW5PKA"},                          // equal pieces
		{"sk_test_ 4eC39 HqLyj WDarj tT1zd p7dc", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"}, // shorter last piece
	} {
		got, ok := joinAfterPrefixes(tc.text)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("joinAfterPrefixes(%q) = %q, %v; want %q", tc.text, got, ok, tc.want)
		}
	}
}
