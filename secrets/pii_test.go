package secrets

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

// piiCases must be found, with want among the ids.
var piiCases = []struct{ text, want string }{
	// Payment cards: test numbers are card numbers.
	{"card 4111 1111 1111 1111, exp 12/27", PIIPaymentCard},
	{"Use 4242 4242 4242 4242 for the Stripe checkout.", PIIPaymentCard},
	{"4242424242424242", PIIPaymentCard},
	{"Mastercard 5555-5555-5555-4444", PIIPaymentCard},
	{"MC 2-series 2223003122003222", PIIPaymentCard},
	{"Amex 3782 822463 10005", PIIPaymentCard},
	{"Discover 6011 1111 1111 1117", PIIPaymentCard},
	{"JCB 3530 1113 3330 0000", PIIPaymentCard},
	{"银联卡号 6200000000000005，尾号 0005", PIIPaymentCard},
	{"Diners 3056 930902 5904", PIIPaymentCard},
	{"Diners 3056 9309 0259 04", PIIPaymentCard},
	{"old 13-digit Visa 4222222222222", PIIPaymentCard},
	{"card no. 2 4000 0566 5566 5556 cvc 123", PIIPaymentCard},
	{"卡号：４１１１ １１１１ １１１１ １１１１", PIIPaymentCard},             // full-width digits
	{"4111\u200b1111\u200b1111\u200b1111", PIIPaymentCard}, // zero-width spaces
	{"card (base64): " + base64.StdEncoding.EncodeToString([]byte("4111 1111 1111 1111")), "decoded-base64:" + PIIPaymentCard},
	// US SSNs, in their written forms.
	{"SSN 123-45-6789", PIIUSSSN},
	{"her social security number is 078 05 1120", PIIUSSSN},
	{"ssn: 219099999", PIIUSSSN},
	{"Social Security: 536-90-4399.", PIIUSSSN},
	// Chinese resident ids.
	{"身份证号 11010519491231002X", PIIChinaResidentID},
	{"身份证：11010519491231002x", PIIChinaResidentID},
	{"ID 440524198001010013 on file", PIIChinaResidentID},
	{"310115 19900307 1239", PIIChinaResidentID},
	{"身份证号码是510108200002294560。", PIIChinaResidentID}, // 29 February 2000
	// IBANs.
	{"IBAN DE89 3704 0044 0532 0130 00", PIIIBAN},
	{"pay to GB82 WEST 1234 5698 7654 32 by Friday", PIIIBAN},
	{"FR14 2004 1010 0505 0001 3M02 606", PIIIBAN},
	{"NL91ABNA0417164300", PIIIBAN},
	{"Norwegian account NO9386011117947.", PIIIBAN},
	{"CH9300762011623852957", PIIIBAN},
}

// piiInvalid are numbers of the right shape whose checksum, range or date
// is wrong: none may be found.
var piiInvalid = []string{
	"4111 1111 1111 1112",          // Luhn
	"4242424242424241",             // Luhn
	"5555 5555 5555 4445",          // Luhn
	"3782 822463 10006",            // Luhn
	"1234 5678 9012 3456",          // Luhn, and no issuer starts with 1
	"9111 1111 1111 1111",          // no issuer
	"3782822463100050",             // an Amex number is 15 digits
	"4111 1111 1111 11",            // 14 digits: no Visa length
	"SSN 000-12-3456",              // area 000
	"SSN 666-12-3456",              // area 666
	"SSN 900-12-3456",              // area 9xx
	"SSN 987-65-4321",              // area 9xx (advertising range)
	"SSN 123-00-4567",              // group 00
	"SSN 123-45-0000",              // serial 0000
	"SSN 123-45 6789",              // mixed separators
	"110105194912310021",           // check digit
	"990105194912310023",           // no province 99
	"110105184912310020",           // born 1849
	"110105209912310029",           // born in 2099
	"110105202302301238",           // 30 February
	"DE89 3704 0044 0532 0130 01",  // mod 97
	"DE89370400440532013001",       // mod 97
	"XX89 3704 0044 0532 0130 00",  // no such country
	"DE89 3704 0044 0532 0130 0",   // too short for Germany
	"DE00 3704 0044 0532 0130 00",  // check digits 00
	"GB82 WEST 1234 5698 7654 321", // longer than a British IBAN
}

// piiLookAlikes are ordinary text full of numbers: none may be found.
var piiLookAlikes = []string{
	// Phone numbers.
	"Call me on +1 (415) 555-0132 or +1 415 555 0132.",
	"客服电话 +86 138 0013 8000，或者 13800138000",
	"London office: +44 20 7946 0958; Berlin +49 30 901820",
	"Dial 0049 30 12345678 then extension 4411.",
	"call 415-555-0132 after 5",
	// Order, tracking, invoice and account numbers.
	"Order #112-4567890-1234567 shipped.",
	"order number 4029 3847 5610 2938 is delayed",
	"UPS tracking 1Z999AA10123456784, FedEx 7946 1234 5678",
	"invoice INV-20240312-0042 and PO-2024-000123",
	"订单号 202403121530451230 已发货",
	"routing number 021000021, account ending 6789",
	"ISBN 978-3-16-148410-0 and 9780306406157",
	// Timestamps and dates.
	"created 1717171717171 (ms) and 1700000000123456789 (ns)",
	"log line 20240312153045123 INFO started",
	"2024-03-12T15:30:45.123456789Z and 2024-03-12 15:30:45",
	"deadline 20240312, then 2024/03/12",
	// Versions, builds, sizes, money.
	"Upgraded to v1.22.3, build 2024.03.12.1530, kernel 6.8.0-1015-aws.",
	"The dataset has 1 000 000 000 000 rows and costs $1,234,567,890.12.",
	"Population: 1,411,750,000; GDP 17 963 171 000 000 USD",
	// Hashes and ids.
	"sha256 3f9c2a1b7e4d5f60718293a4b5c6d7e8f90123456789abcdef0123456789ab",
	"commit 4111111111111111111111111111111111111111",
	"md5 d41d8cd98f00b204e9800998ecf8427e",
	"ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV and uuid 550e8400-e29b-41d4-a716-446655440000",
	"tweet id 1453612870339821568, snowflake 123456789012345677",
	"Stripe charge ch_3MmlLrLkdIwHu7ix0snN0B15 for customer cus_NffrFeUfNV2Hib",
	"memgate record 01JTEST0000000000000000001 in slot_4111111111111111",
	"ZIP 94105-1234; coordinates 37.7749295, -122.4194155; IP 192.168.100.200",
	"pi is 3.14159265358979323846 and e is 2.71828182845904523536",
	"x-4111111111111111 and id=4111111111111111x",
	"Model DE89370400 ships with firmware GB82WEST.",
	"Room 123-45, part no. 123-456-7890, 12-345-6789",
	"the numbers 123456789 and 987654321 are not social security numbers",
}

func TestFindsPII(t *testing.T) {
	s := newScanner(t)
	for _, c := range piiCases {
		got := s.FindPII(c.text)
		if !slices.Contains(got, c.want) {
			t.Errorf("%q: got %v, want %s among them", c.text, got, c.want)
		}
		if secrets := s.FindSecrets(c.text); secrets != nil {
			t.Errorf("%q: PII reported as a secret too: %v", c.text, secrets)
		}
	}
}

func TestPIIChecksumsMatter(t *testing.T) {
	wantNothing(t, "invalid number found:", newScanner(t).FindPII, piiInvalid)
}

func TestPIIIgnoresLookAlikes(t *testing.T) {
	s := newScanner(t)
	texts := append(slices.Clone(piiLookAlikes), benignCases...)
	for _, c := range secretCases {
		texts = append(texts, c.text)
	}
	wantNothing(t, "false positive", s.FindPII, texts)
}

// TestPIIIsNotASecret keeps the two kinds apart: a secret is not reported
// as PII (the governor rejects one and leaves the other to policy).
func TestPIIIsNotASecret(t *testing.T) {
	var texts []string
	for _, c := range secretCases {
		texts = append(texts, c.text)
	}
	wantNothing(t, "secret reported as PII:", newScanner(t).FindPII, texts)
}

// validatorCase is an input of a validator and whether it is valid.
type validatorCase struct {
	in string
	ok bool
}

// checkValidator checks a validator's answer on each case.
func checkValidator(t *testing.T, name string, valid func([]byte) bool, cases []validatorCase) {
	t.Helper()
	for _, tc := range cases {
		if got := valid([]byte(tc.in)); got != tc.ok {
			t.Errorf("%s(%s) = %v, want %v", name, tc.in, got, tc.ok)
		}
	}
}

func TestLuhn(t *testing.T) {
	checkValidator(t, "luhn", luhn, []validatorCase{
		{"4111111111111111", true}, {"79927398713", true}, {"0", true},
		{"4111111111111112", false}, {"79927398710", false}, {"1", false},
	})
}

func TestCardIssuer(t *testing.T) {
	checkValidator(t, "cardIssuer", cardIssuer, []validatorCase{
		{"4111111111111", true},     // Visa 13
		{"41111111111111", false},   // Visa 14
		{"5105105105105100", true},  // Mastercard 51-55
		{"2720990000000000", true},  // Mastercard 2221-2720
		{"2721000000000000", false}, // past the 2-series
		{"2220990000000000", false}, // before it
		{"378282246310005", true},   // Amex
		{"3782822463100050", false}, // Amex is 15
		{"6011000990139424", true},  // Discover
		{"6445000000000000", true},  // Discover 644-649
		{"6500000000000000000", true},
		{"3566002020360505", true},  // JCB
		{"3527000000000000", false}, // before JCB
		{"6200000000000005", true},  // UnionPay
		{"30569309025904", true},    // Diners 14
		{"36000000000000", true},    // Diners 36
		{"30600000000000", false},   // 306 is no Diners prefix
		{"7000000000000000", false},
		{"1000000000000000", false},
	})
}

func TestValidSSN(t *testing.T) {
	checkValidator(t, "validSSN", validSSN, []validatorCase{
		{"123456789", true}, {"078051120", true}, {"899999999", true}, {"001010001", true},
		{"000123456", false}, {"666123456", false}, {"900123456", false}, {"999999999", false},
		{"123004567", false}, {"123450000", false},
	})
}

func TestValidResidentID(t *testing.T) {
	checkValidator(t, "validResidentID", func(b []byte) bool { return validResidentID(b, 2024) }, []validatorCase{
		{"11010519491231002X", true},
		{"440524188001010014", false}, // born 1880: before 1900
		{"310115199003071239", true},
		{"510108200002294560", true},  // 29 February 2000
		{"510108200102294567", false}, // 29 February 2001
		{"65010219851010333X", true},
		{"110105194912310021", false}, // check digit
		{"11010519491231002Y", false},
		{"990105194912310023", false}, // province
		{"110105202501010011", false}, // born after 2024
	})
}

func TestValidIBAN(t *testing.T) {
	checkValidator(t, "validIBAN", validIBAN, []validatorCase{
		{"DE89370400440532013000", true},
		{"GB82WEST12345698765432", true},
		{"FR1420041010050500013M02606", true},
		{"MT84MALT011000012345MTLCAST001S", true},
		{"DE89370400440532013001", false},
		{"GB82WEST12345698765423", false}, // two digits swapped
		{"DE01370400440532013000", false}, // check digits 01
		{"DE99370400440532013000", false}, // check digits 99
	})
}

// TestPIIScansEachParagraphForm finds a number in one paragraph of a long
// text that only folding reveals, as memory.ScanRecord joins a record's
// fields.
func TestPIIScansEachParagraphForm(t *testing.T) {
	s := newScanner(t)
	text := strings.Repeat("An ordinary note about the weather.\n\n", 50) + "卡号 ４２４２４２４２４２４２４２４２"
	if got := s.FindPII(text); !slices.Equal(got, []string{PIIPaymentCard}) {
		t.Errorf("got %v", got)
	}
}
