package secrets

import (
	"slices"
	"testing"
)

// proseCases are credentials written in prose in the three shapes of
// issue 25, English and Chinese; each must be found by the rule named.
// They are kept apart from secretCases so that the benchmarks' texts stay
// as they were.
var proseCases = []struct{ name, text, want string }{
	// A login given as user and password together.
	{"pair after login and is", "The admin login for the staging Grafana is grafana-ops / Birch-Lantern-42!", "credential-pair"},
	{"pair after login, no spaces", "the printer's web login is admin/Kx93mq2Lp, don't change it", "credential-pair"},
	{"pair after a colon", "login for the NAS: backup / Tq8#mZ2pLx", "credential-pair"},
	{"pair joined by a colon", "creds: deploy:Hk7pq91xZ", "credential-pair"},
	{"pair after creds and are", "Jenkins creds are ci-bot / w7rq2mlp9x", "credential-pair"},
	{"pair after credentials, dash", "SFTP credentials — partner_acme / Vq8Lm2Ww9x", "credential-pair"},
	{"pair after user/pass", "user/pass for the camera: viewer / cam2024x", "credential-pair"},
	{"user then password keyword", "wiki account: user mlopez, password orchid77", "credential-pair"},
	{"username and password keywords", "username alice.w and password spruce2291 for the test tenant", "credential-pair"},
	{"zh pair after 账号是", "路由器的登录账号是 admin / Kx93mq2Lp，别告诉访客", "credential-pair"},
	{"zh pair after 登录", "测试服登录：tester:qw3rty88", "credential-pair"},
	{"zh user then 密码", "用户名 admin 密码 orchid77", "credential-pair"},
	{"zh 账号 then 密码", "账号 zhangwei，密码 lm8qt2vr，周一前改掉", "credential-pair"},
	{"zh 账密", "打印机后台账密 root/hk7pq91xz", "credential-pair"},

	// A keyword directly followed by its value.
	{"auth token, hex", "Our Twilio auth token 4c8e1f0a9b7d2e6c3a5f8b1d0e9c7a24 is on the wiki", "key-inline"},
	{"sid then auth token", "SMS: account SID AC4c8e1f0a9b7d2e6c3a5f8b1d0e9c7a24, auth token 8b1d0e9c7a244c8e1f0a9b7d2e6c3a5f", "key-inline"},
	{"api key with a suffix", "Mailchimp API key 7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c8e-us21", "key-inline"},
	{"api key, mixed case", "use API key Xk29vLq8Rt4Wm2Np7Zs for the geocoder", "key-inline"},
	{"client secret", "client secret Lq9ZxV2mTn8Rk4Wp6Yd3 (prod tenant)", "key-inline"},
	{"signing secret", "webhook signing secret 8f14e45fceea167a5a36dedd4bea2543", "key-inline"},
	{"access token", "the access token Ya29Kq2Lp9Xm4Vz8Rt3NwB7 works until Friday", "key-inline"},
	{"bare token", "token 9c1a7e3f5b2d8c4a6e0f9b3d7a1c5e8f for the metrics push", "key-inline"},
	{"secret key", "secret key Lrbnul0GVwI0275cECVVBjsYuGPqXI", "key-inline"},
	{"zh 密钥 glued", "飞书应用密钥cOFrinLzJmJ3tFWnrlYQwWjrtxm，推送要用", "key-inline"},
	{"zh 密钥 spaced", "支付网关的 API 密钥 Zp4kW9xQ2mL7vR3nT8yB，别外传", "key-inline"},
	{"zh 令牌", "监控推送令牌 9c1a7e3f5b2d8c4a6e0f9b3d7a1c5e8f", "key-inline"},
	{"private key, 0x hex", "wallet private key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", "key-inline"},

	// The value after a clause that names the keyword.
	{"it is now, after a comma", "I rotated the staging API token last night, it is now Rf7_kd92LmQpX3zT", "password-clause"},
	{"it is, after a question", "the wifi password? it is Lantern!Moss42", "password-clause"},
	{"now it's", "Reset Mum's email password for her, now it's Tulip-2291 (she wrote it down)", "password-clause"},
	{"it's, after a dash", "the guest wifi passphrase got changed — it's Orchid-7741!", "password-clause"},
	{"and it's now", "changed the NAS password and it's now Vq8#Lm2Ww9", "password-clause"},
	{"zh 现在是", "新的密码，现在是 Lm8#qT2vRz", "password-clause-zh"},
	{"zh 改了，现在是", "wifi 密码昨天改了，现在是 Kx93!mq2", "password-clause-zh"},
	{"zh 改成了", "数据库口令换过一次，改成了 Qw3rty!88", "password-clause-zh"},
	{"zh token 重置", "机器人的 token 已经重置，现在是 Xk29vLq8Rt4Wm2Np7Zs", "password-clause-zh"},
}

// proseNearMisses name a login, a key or a password, or put a value-like
// string near one, without giving a credential: none may be found.
var proseNearMisses = []string{
	// Pairs that are not logins.
	"the login page is /admin / settings",
	"key takeaways: latency / throughput",
	"see user/password.go and auth/token_test.go for the login code",
	"login at https://sso.corp.internal/login?next=/home",
	"credentials rotated on 2026/05/12",
	"the login flow: user / password / 2FA code",
	"login with username/password or SSO",
	"fix login: username/password2 fields swapped",
	"creds: see 1Password / vault",
	"login service v2.3.1 / v2.4.0 migration",
	"login: 10:30 / 11:45 on Mondays",
	"credentials: aws/v2 credentials provider",
	"creds: github.com/acme/creds2go",
	"Login/logout: fix race in session refresh (#1234)",
	"my login for the forum is the same as my email",
	"user alice, password reset link sent",
	"username field and password field are required",
	"login (user: admin, password: see vault)",
	"login: SSO/OAuth2 for staff",
	"登录用 SSO/OAuth2",
	"login v1.2/v1.3beta rollout",
	"creds expire 2026-05-12/2026-06-12",
	"user_id 1234 password_v2_hash column",
	"sign-in methods: email/password, Google, Apple",
	"credentials: client_id/client_secret fields",
	"the superuser2go tool, password-less",
	"登录页面是 /admin/login",
	"用户名和密码的长度都有限制",
	"登录时间 2026/05/12 10:30",
	"账号 zhangwei 的邮箱是 zhang.wei@corp.cn",

	// Keywords followed by a word or a number.
	"token bucket size 64",
	"the auth token expires after 3600 seconds",
	"auth token TTL 3600s",
	"secret key length 32 bytes",
	"access token ttl_seconds_3600 in the config",
	"API key rotation is quarterly since 2024-03-01",
	"token count 128000 per request",
	"API key header X-Api-Key carries it",
	"the session token format v2-compact-2024 is documented",
	"fix token refresh race (3f9c2a1b7e4d5f60718293a4b5c6d7e8f9012345)",
	"fix 9fceb02d0ae598e95dc970b74767f19372d61af8 broke the login flow",
	"request id 3f2504e0-4f89-11d3-9a0c-0305e82c3301 failed at login",
	"access token endpoint https://auth.corp.internal/oauth2/token",
	"secret key path /etc/memgate/keys/signing_2024.pem",
	"api key docs/keys/rotation-2024.md",
	"token records2024summary is a table name",
	"the USDC token 0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48 on mainnet",
	"aws dynamodb list-tables --starting-token abCDeFGhiJKlmnOPqrSTuvwxYZ1aBCdEFghijK7LM51nOpqRSTuv3WxY3",
	"the next page token 9f4d9f69-275a-41fe-b58e-2b837bd9ba48 goes in the following call",
	"pass change token 12cs345-67cd-890b-1cd2-c3a4567d89f1 to update-rule",
	"令牌桶容量 64",
	"密钥长度 2048 位",
	"密钥 KMS 托管，每季度轮换",
	"令牌 3600 秒后过期",

	// A clause after the keyword that gives no value.
	"reset your password, it's now required to be 12 chars",
	"the password was weak, it's now 16 characters",
	"I changed the password policy, it's now v2.3",
	"the token is long because it is base64url encoded",
	"the password manager? it is 1Password",
	"the login is slow; it is now 3.2s at p99",
	"we moved the API key to Vault, it's now at secret/data/api",
	"the token expired, it's now past 10:42",
	"password rotation, it's now every 90 days",
	"password hashing moved to argon2id, it's now the default",
	"the token limit was hit, it is now gpt-4o-mini",
	"API token scope broadened; it is now repo:write",
	"the session token lasts 8h so it is now 16:00",
	"新的密码，现在是生日加手机尾号",
	"密码改了，现在是 16 位",
	"密码策略改了，现在是 90 天过期",
	"令牌的格式，现在是 JWT",
	"pass the ([#9162](https://github.com/open-policy-agent/opa/pull/9162)) link along",
}

func TestFindsCredentialsInProse(t *testing.T) {
	s := newScanner(t)
	for _, c := range proseCases {
		t.Run(c.name, func(t *testing.T) {
			got := s.FindSecrets(c.text)
			if !slices.Contains(got, c.want) {
				t.Errorf("%q: got %v, want %s among them", c.text, got, c.want)
			}
		})
	}
}

func TestIgnoresProseNearMisses(t *testing.T) {
	wantNothing(t, "false positive", newScanner(t).FindSecrets, proseNearMisses)
}

// proseLimits are the limits secrets' doc states for these shapes, as
// found (true) or not (false), so that the doc stays true: a change that
// closes a gap or opens one updates both.
var proseLimits = []struct {
	text  string
	found bool
}{
	{"I changed the wifi password. It's now Orchid-7741!", false}, // the next sentence
	{"alice / Orchid-7741!", false},                               // no keyword
	{"the admin login is admin / admin", false},                   // reads as a word
	{"creds: bob / Orch77x", false},                               // a half shorter than 8
	{"login alice, Orchid-7741!", false},                          // a comma between the halves
	{"login 张伟 / Orchid-7741!", false},                            // a user name in Han
	{"Mailgun key 3ax6xnjp29jd6fds4gc373sgvjxteol0", false},       // a bare "key"
	{"the bot token cOFrinLzJmJtFWnrlYQwWjrtxmNHbunT", false},     // no digit
	{"credentials: client_id/secret_v2x", true},                   // an identifier with a digit
	{"the token, it's now GPT4-turbo", true},                      // a word with a digit
	{"session token 3f2504e0-4f89-11d3-9a0c-0305e82c3301", true},  // a UUID named a token
	{"request id 3f2504e0-4f89-11d3-9a0c-0305e82c3301", false},
}

func TestProseLimits(t *testing.T) {
	s := newScanner(t)
	for _, c := range proseLimits {
		if got := s.FindSecrets(c.text); (got != nil) != c.found {
			t.Errorf("%q: got %v, doc says found = %v", c.text, got, c.found)
		}
	}
}
