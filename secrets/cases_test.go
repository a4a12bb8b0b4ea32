package secrets

import "strings"

// Fake credentials: format-valid, random, and free of the words gitleaks
// allowlists (example, test, dummy, sample).
const (
	fakeAKIA      = "AKIAULQUYFHOYLIW5PKA"
	fakeASIA      = "ASIALCKRDRP4HFRTGRGR"
	fakeAWSSecret = "+VmXE39qhFWUExJYDWO3yEttLsTFDo8w9oS4VxRH"
	fakeGHP       = "ghp_gy902HmrHx7kUeUjeYee2FOdvEICn8jaLh4P"
	fakeGHPat     = "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"
	fakeGLPat     = "glpat-XRvPZcpZqKaVNQfGk87W"
	fakeSkLive    = "sk_live_lqiJjPU6Jnz4Oi7yshZFkfoKFzVg8kfkmbiowScBnp4QdFSW"
	fakeRkLive    = "rk_live_UoYlA1gZvl7PyG7L5wPNOBKf4uNdc8rdUAiiAfYBNS7B7rx9"
	fakeOpenAI    = "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"
	fakeOpenAI2   = "sk-proj-wW3kOTejPHWZQdWU-SPVimSsM1Lg63aqDOWh-H5EK2yMRNadsObMPoMaNfqbRb_E"
	fakeOpenAI3   = "sk-ZB5DnakSp6OArdcQA5NOTOEFj5ubKeeiJ1QPBfwSLgL834IN"
	fakeAnthropic = "sk-ant-api03-vcaYlXGD1KHj4pQ59iAQnnEq3GoPKpWBVsoCKctG7Nx9DJ1gxRob_vOmek0dLF_taBi7X732LPlMYzn5XoVsJuLAbVR1OAA"
	fakeAntAdmin  = "sk-ant-admin01-vT-7t-H177Nl8pvIFYj08IRc22wu_IT-Ml8j_ZHy_mnGuc_IGtCpkEFvnFrY"
	fakeJWT       = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1Xzg4NDIiLCJuYW1lIjoiTGluIFdlaSIsImlhdCI6MTc2NzIyNTYwMCwicm9sZSI6ImFkbWluIn0.-GhiZMqItPTOp2rsH2HhKaqJ7RxqBfQpj5ZvD6I-mtn"
	fakeSlack     = "https://hooks.slack.com/services/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"
	fakeGCP       = "AIza1QINpzIWhQrjar_NjwZ3H4gbx6AZUCiDWEs"
	fakeAzureKey  = "0bQG+OHsfqZfRStn7WgqY6fIsN1fkw7G4siUom9WmTay8MXXO09KyAwJNiDjMLL6JMgh/iv6+sIl0VkxNWrIYP=="
	fakePEMBody   = "rurrYN4VlwjmGfw7xxkuH+ucIGzKHluMTpa1h9gOhIX72ODYbp7ibY+Q30Vc+sDg\nlEcQNeRPD8gNEX+pbw4m3M4hINZ3s1oiglsv/50pIW05lDGjvyWnPi/Va89Uq+gJ\nTcEYAEgwRnKOeq5gUigt4QvlnMxTP1UHXZuiV2CBBgCv9SfAGp8pBQn3o299Gm/W\nxDS6YpLVH7/Uig/N0qx8m4j8IPtZJ5CH24awse4qOXvdqNocfJz9c3T1ieEcYTXC"
	fakeTencentID = "AKIDcACMVwsAFgTnyrhB1ivD7fQTjgXisUrd"
	fakeTencentSK = "IDwESenEgmhSxKPtpM6jeG1Y12ab4aID"
	fakeAliID     = "LTAIodj8eub18uRmnuMPQYm2"
	fakeAliSecret = "Lrbnul0GVwI0275cECVVBjsYuGPqXI"
	fakeBearer    = "4weL.xPwqdDxREsmWRbEIO-8L_sZFS.Yhu8JdNru"
)

// spaced writes s with a space between every character.
func spaced(s string) string { return strings.Join(strings.Split(s, ""), " ") }

// grouped writes s in space-separated groups of n characters.
func grouped(s string, n int, sep string) string {
	var parts []string
	for len(s) > n {
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return strings.Join(append(parts, s), sep)
}

// secretCases must all be found. want, if set, must be among the ids.
var secretCases = []struct{ text, want string }{
	// Encoded values in a text about credentials, whatever the phrasing.
	{"The Jenkins credentials, base64: Y2ktZGVwbG95ZXI6Unc5IWtUejJMcTd2Qm4=", "encoded-credential"},
	{"堡垒机登录密码的十六进制编码是 42617374696f6e234b762d3868337a51，用的时候先解码。", "encoded-credential"},
	{"企业邮箱的客户端授权码：xrssvuymoxpnzwgj", "password-assignment-zh"},
	// A value right after its keyword, with no verb.
	{"Jenkins staging box — login ops-admin, password RX@Le5utIyXC7*. Only needed for the nightly job.", "password-inline"},
	{"Combination for the safe in the warehouse cage: 417165", "password-inline"},
	{"前门门禁密码 728129，按完记得再按井号键。", "password-inline"},
	{"Clinic guest Wi-Fi is BrightSmile-Guest and the passphrase is %Pi%GXbLCE97", "password-assignment"},
	// Cloud keys.
	{"Prod AWS key id is " + fakeAKIA + ", the secret is in Vault.", "aws-access-token"},
	{"aws creds for the backup job: " + fakeAKIA + " / " + fakeAWSSecret, "aws-secret-access-key"},
	{"temporary STS key " + fakeASIA + " expires tonight", "aws-access-token"},
	{"aws_secret_access_key = " + fakeAWSSecret, "aws-secret-access-key"},
	{"AWS 的 Secret Access Key 是 " + fakeAWSSecret + "，不要外传", "aws-secret-access-key"},
	{"Maps API key for the web app: " + fakeGCP, "gcp-api-key"},
	{"DefaultEndpointsProtocol=https;AccountName=memgatelogs;AccountKey=" + fakeAzureKey + ";EndpointSuffix=core.windows.net", "azure-connection-string-key"},
	{"Endpoint=sb://orders-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + fakeAzureKey, "azure-connection-string-key"},
	{"腾讯云 SecretId " + fakeTencentID + "，SecretKey 是 " + fakeTencentSK, "tencent-cloud-secret-id"},
	{"腾讯云 SecretKey 是 " + fakeTencentSK, "password-assignment-zh"},
	{"阿里云 AccessKey ID 是 " + fakeAliID, "alibaba-access-key-id"},
	{"阿里云 AccessKey Secret: " + fakeAliSecret, ""},

	// Developer platform tokens.
	{"Alice's GitHub token: " + fakeGHP, "github-pat"},
	{"export GITHUB_TOKEN=" + fakeGHP, "github-pat"},
	{"fine-grained PAT for the release bot: " + fakeGHPat, "github-fine-grained-pat"},
	{"GitLab 的访问令牌是 " + fakeGLPat, "gitlab-pat"},
	{"ci uses " + fakeGLPat + " to push tags", "gitlab-pat"},
	{"Stripe live secret key " + fakeSkLive, "stripe-access-token"},
	{"把 Stripe 密钥 " + fakeSkLive + " 存到备忘录", "stripe-access-token"},
	{"restricted key for reporting: " + fakeRkLive, "stripe-access-token"},
	{"OPENAI_API_KEY=" + fakeOpenAI, "openai-api-key"},
	{"the project key is " + fakeOpenAI2, "openai-project-key"},
	{"old OpenAI key " + fakeOpenAI3 + " still works", "sk-prefixed-key"},
	{"Claude key: " + fakeAnthropic, "anthropic-api-key"},
	{"Anthropic admin key " + fakeAntAdmin, "anthropic-key"},
	{"Session cookie is " + fakeJWT, "jwt"},
	{"curl -H 'Authorization: Bearer " + fakeBearer + "' https://api.internal/v1/me", "bearer-token"},
	{"Deploy alerts go to " + fakeSlack, "slack-webhook-url"},
	{"Authorization: Basic ZGVwbG95OkhrNyNwcTkxeFo=", "basic-auth-header"},

	// Private keys.
	{"-----BEGIN RSA PRIVATE KEY-----\n" + fakePEMBody + "\n-----END RSA PRIVATE KEY-----", "private-key"},
	{"the deploy key starts -----BEGIN OPENSSH PRIVATE KEY-----\n" + fakePEMBody[:130], "private-key-block"},
	{`{"key":"-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(fakePEMBody[:140], "\n", `\n`) + `"}`, "private-key-block"},

	// Passwords in English prose and config.
	{"The SMTP password for the mailer is Orchid-7741!", "password-assignment"},
	{"My gmail password is Tr0ub4dor&3", "password-assignment"},
	{`db_password = "Orchid-7741!xq"`, "password-assignment"},
	{"DB_PASSWORD=Vq8#Lm2Ww9 in the staging .env", "password-assignment"},
	{"The wifi passphrase was changed to Lantern!Moss42", "password-assignment"},
	{"VPN passcode: 847291", "password-assignment"},
	{"His bank PIN is 482913", "password-assignment"},
	{"pwd: Hk7#pq91xZ", "password-assignment"},
	{"The Jenkins admin password is now xKqPmwLrTz", "password-assignment"},
	{"API key: Xk29vLq8Rt4Wm2Np7Zs", ""},
	{"The Mailgun API key is key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "password-assignment"},
	{"Refresh token was set to Rf7_kd92LmQpX3zT", "password-assignment"},
	{"Remember: the root password for db01 is 'S3cure!Pass#2024'", "password-assignment"},
	{"client secret => Lq9ZxV2mTn8Rk4Wp", "password-assignment"},
	{"password reset done; new password is Birch-8812#", "password-assignment"},
	{"password: Vq8#Lm2Ww9\nhost: db.internal", "password-assignment"},
	{`{"service":"billing","api_key":"Xk29vLq8Rt4Wm2Np7Zs"}`, ""},

	// Passwords in Chinese.
	{"wifi 密码是 Kx93!mq2", "password-assignment-zh"},
	{"数据库口令：Qw3rty!88", "password-assignment-zh"},
	{"我的邮箱密码改成了 Lantern!Moss42，别忘了", "password-assignment-zh"},
	{"服务器 root 密码为 Hk7#pq91xZ", "password-assignment-zh"},
	{"新的 API 令牌设置为 Rf7_kd92LmQpX3zT", "password-assignment-zh"},
	{"银行卡密码是 860412", "password-assignment-zh"},
	{"私钥口令：Birch-8812#", "password-assignment-zh"},
	{"生产环境的 token 为 Xk29vLq8Rt4Wm2Np7Zs", "password-assignment-zh"},
	{"密钥已经更新为 Qm7#Lp2x9Z", "password-assignment-zh"},
	{"路由器管理员密码是「Tx8$kq2Lm」", "password-assignment-zh"},

	// URLs with credentials.
	{"redis://default:T0pS3cret99@cache.internal:6379", "credential-url"},
	{"Use postgres://app_rw:Vq8#Lm2Ww9@db.internal:5432/orders for the migration", "credential-url"},
	{"mysql://root:Hk7pq91xZ@10.0.3.4:3306/shop", "credential-url"},
	{"amqp://guest:Rb4!nQ8zLw@rabbit.prod:5672/", "credential-url"},
	{"mongodb+srv://svc_memgate:Mz82LqpX7Vr@cluster0.ab1cd.mongodb.net/memories", "credential-url"},
	{"clone with https://deploy:Gt5kW9xQ2pL@git.corp.internal/infra/tools.git", "credential-url"},
	{"Redis 连接串是 redis://:T0pS3cret99@10.1.2.3:6379/0", "credential-url"},

	// Encoded.
	{"config blob 70617373776f72643d4f72636869642d3737343121", "decoded-hex:password-assignment"},
	{"note: ZGIgcGFzc3dvcmQ6IEt4OTMhbXEyTHA=", "decoded-base64:password-assignment"},
	{"备份的配置（base64）：cG9zdGdyZXM6Ly9hcHA6VnE4I0xtMld3OUBkYi5pbnRlcm5hbDo1NDMyL2FwcA==", "decoded-base64:credential-url"},
	{"blob dG9rZW4gZ2hwX0tnVjlnTTJPaDdwMWxjalZnU1pwb2JrbHFiY2htalk0U04xRQ== from the old wiki", "decoded-base64:github-pat"},
	{"env dump: YXdzX3NlY3JldF9hY2Nlc3Nfa2V5PTVpeVVEZ2YyY3JzSFFpYzNzb0hPSFlaTGxnRzNWUHREbklocmp5WUY=", "decoded-base64:aws-secret-access-key"},

	// Spaced out or split.
	{"the key reads " + grouped(fakeAKIA, 4, " "), "aws-access-token"},
	{"id " + grouped(fakeAKIA, 4, "-"), "aws-access-token"},
	{"stripe: " + spaced(fakeSkLive), "stripe-access-token"},
	{"token " + grouped(fakeGHP, 4, " "), "github-pat"},
	{"gitlab " + grouped(fakeGLPat, 5, "  "), "gitlab-pat"},
	{"Claude 的 key 是 " + spaced(fakeAntAdmin), "anthropic-key"},

	// Hidden by invisible or compatibility characters.
	{"token " + fakeGHP[:12] + "\u200b" + fakeGHP[12:], "github-pat"},
	{"AWS " + fakeAKIA[:8] + "\u00ad" + fakeAKIA[8:], "aws-access-token"},
	{"key " + fakeSkLive[:10] + "\u2060" + fakeSkLive[10:20] + "\ufeff" + fakeSkLive[20:], "stripe-access-token"},
	{"ｐａｓｓｗｏｒｄ：Orchid-7741!", "password-assignment"},
	{"ＡＫＩＡ" + fakeAKIA[4:], "aws-access-token"},
	{"glpat-\u202e" + fakeGLPat[6:] + "\u202c", "gitlab-pat"},
	{"密码是 Kx93\ufe0f!mq2\u200d", "password-assignment-zh"},

	// Other phrasings and command lines.
	{"password: Welcome1", "password-assignment"},
	{"my gmail pw is Orchid-7741!", "password-assignment"},
	{"SSH passphrase — Lantern!Moss42", "password-assignment"},
	{"Password → Orchid-7741!", "password-assignment"},
	{"mysql -u root -pHk7pq91xZ shop", "cli-password"},
	{"sshpass -p 'Orchid-7741!' ssh deploy@10.0.3.4", "cli-password"},
	{"PGPASSWORD=Vq8Lm2Ww9x psql -h db.internal", "password-assignment"},
	{"export AWS_SECRET_ACCESS_KEY=" + fakeAWSSecret, "aws-secret-access-key"},
	{"Twilio auth token is 9f2a7c3e8b1d4f6a0c5e9b2d7f3a1c8e", "password-assignment"},
	{"psql --password=Qm7#Lp2x9Z -h db.internal", "password-assignment"},
}
