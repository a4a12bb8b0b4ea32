package secrets

import (
	"slices"
	"strings"
	"time"
)

// Ids of the personal-data detectors, as FindPII reports them.
const (
	PIIPaymentCard     = "pii-payment-card"
	PIIUSSSN           = "pii-us-ssn"
	PIIChinaResidentID = "pii-cn-resident-id"
	PIIIBAN            = "pii-iban"
)

// FindPII returns the sorted, deduplicated ids of the personal-data
// detectors that match text (PIIPaymentCard, PIIUSSSN, PIIChinaResidentID,
// PIIIBAN), or nil. Like FindSecrets it never returns any part of the text.
//
// Every detector checks a checksum or a structure a number must have, so
// that ordinary numbers (phone and order numbers, timestamps, versions,
// hashes, ids) are not reported: a card number passes the Luhn check and
// starts with a known issuer prefix, an IBAN has its country's length and
// mod-97 check, a Chinese resident id its ISO 7064 check digit, province
// and birth date, an SSN its allowed ranges and written form. Test card
// numbers (4111 1111 1111 1111) are card numbers.
//
// The text is scanned as written and folded (full-width digits, invisible
// characters between digits), and with base64 and hex tokens decoded in
// place; a match found only once decoded is reported as
// "decoded-base64:<id>" or "decoded-hex:<id>".
func (s *Scanner) FindPII(text string) []string {
	ids := findPII(text, nil)
	for _, para := range strings.Split(text, paragraphBreak) {
		forms := []string{para}
		if f := fold(para); f != para {
			ids = findPII(f, ids)
			forms = append(forms, f)
		}
		for _, form := range forms {
			for _, d := range decodeInPlace(form) {
				for _, id := range findPII(d.text, nil) {
					ids = append(ids, d.prefix+id)
				}
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	// A number found as written is not also reported as decoded: decoding
	// kept it, it did not reveal it.
	return slices.DeleteFunc(ids, func(id string) bool {
		for _, p := range []string{decodedBase64, decodedHex} {
			if rest, ok := strings.CutPrefix(id, p); ok && slices.Contains(ids, rest) {
				return true
			}
		}
		return false
	})
}

// findPII appends to ids the detectors that match text as it is.
func findPII(text string, ids []string) []string {
	if !hasDigitRun(text, 9) {
		return ids // every detector wants at least 9 digits together
	}
	if hasCard(text) {
		ids = append(ids, PIIPaymentCard)
	}
	if hasSSN(text) {
		ids = append(ids, PIIUSSSN)
	}
	if hasChinaResidentID(text, time.Now().Year()) {
		ids = append(ids, PIIChinaResidentID)
	}
	if hasIBAN(text) {
		ids = append(ids, PIIIBAN)
	}
	return ids
}

// hasDigitRun reports whether text has n digits with at most one space or
// dash between any two of them: the loosest form any detector accepts
// (every IBAN's account has a run of at least 9 digits).
func hasDigitRun(text string, n int) bool {
	run := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case isDigit(c):
			run++
			if run >= n {
				return true
			}
		case (c == ' ' || c == '-') && i > 0 && isDigit(text[i-1]):
			// a separator keeps the run
		default:
			run = 0
		}
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// numberStart reports whether a number may start at text[i]: not inside a
// word, another number, a decimal (3.14159...), a path or an id with
// separators (build-2024-..., v1.2.3).
func numberStart(text string, i int) bool {
	if i == 0 {
		return true
	}
	c := text[i-1]
	return !isAlnum(c) && !strings.ContainsRune("_.-/\\+#$%&@", rune(c))
}

// numberEnd reports whether a number may end before text[j].
func numberEnd(text string, j int) bool {
	if j == len(text) {
		return true
	}
	c := text[j]
	if isAlnum(c) || c == '_' || c == '@' {
		return false
	}
	// "4111-1111-1111-1111-2" or "1.5": the number goes on.
	return !((c == '.' || c == '-' || c == '/') && j+1 < len(text) && isDigit(text[j+1]))
}

// digitGroups reads digits from text[i] in groups separated by one space
// or one dash, the same separator throughout; it returns each group's end
// and the digits.
func digitGroups(text string, i int) (ends []int, digits []byte) {
	var sep byte
	for j := i; j < len(text); {
		if !isDigit(text[j]) {
			break
		}
		for j < len(text) && isDigit(text[j]) {
			digits = append(digits, text[j])
			j++
		}
		ends = append(ends, j)
		if j+1 < len(text) && (text[j] == ' ' || text[j] == '-') && isDigit(text[j+1]) &&
			(sep == 0 || sep == text[j]) {
			sep = text[j]
			j++
			continue
		}
		break
	}
	return ends, digits
}

// --- payment cards

// hasCard reports whether text holds a payment card number: 13 to 19
// digits, written together or in groups (4-4-4-4, 4-6-5 ...), of a length
// its issuer uses, passing the Luhn check. A card number may follow other
// digits in its run ("no. 2 4111 1111 1111 1111") and be followed by more
// (an expiry, a CVC).
func hasCard(text string) bool {
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || !numberStart(text, i) {
			continue
		}
		ends, digits := digitGroups(text, i)
		off, start := 0, i
		for s := range ends {
			if cardAt(text, start, ends[s:], digits[off:]) {
				return true
			}
			off += ends[s] - start
			start = ends[s] + 1 // past the separator
		}
		i = ends[len(ends)-1]
	}
	return false
}

// cardAt reports whether the digit groups from text[start] to ends begin
// with a card number: the first group alone (13 to 19 digits), or a group
// of four and more groups of 3 to 6 digits (the last may be shorter: 4111
// 1111 1111 1, 3056 9309 0259 04) ending where the number ends.
func cardAt(text string, start int, ends []int, digits []byte) bool {
	first := ends[0] - start
	if first >= 13 && first <= 19 {
		return (len(ends) > 1 || numberEnd(text, ends[0])) && validCard(digits[:first])
	}
	if first != 4 {
		return false
	}
	n := 0
	for k, end := range ends {
		size := end - start
		if k > 0 {
			size = end - ends[k-1] - 1
			if size > 6 {
				return false
			}
		}
		n += size
		if n > 19 {
			return false
		}
		if n >= 13 && (k+1 < len(ends) || numberEnd(text, end)) && validCard(digits[:n]) {
			return true
		}
		if size < 3 {
			return false // only the last group may be short
		}
	}
	return false
}

// validCard reports whether d (digits) has an issuer's prefix and length
// and passes the Luhn check.
func validCard(d []byte) bool {
	return cardIssuer(d) && luhn(d)
}

// cardIssuer reports whether d starts with the issuer identification
// number of Visa, Mastercard, American Express, Discover, JCB, UnionPay or
// Diners Club and has a length that issuer uses.
func cardIssuer(d []byte) bool {
	n := len(d)
	p := func(k int) int { // the first k digits as a number
		v := 0
		for _, c := range d[:k] {
			v = v*10 + int(c-'0')
		}
		return v
	}
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case p(2) >= 51 && p(2) <= 55, p(4) >= 2221 && p(4) <= 2720: // Mastercard
		return n == 16
	case p(2) == 34 || p(2) == 37: // American Express
		return n == 15
	case p(4) == 6011, p(3) >= 644 && p(3) <= 649, p(2) == 65: // Discover
		return n >= 16 && n <= 19
	case p(2) == 62: // UnionPay (and Discover's co-branded 622126-622925)
		return n >= 16 && n <= 19
	case p(4) >= 3528 && p(4) <= 3589: // JCB
		return n >= 16 && n <= 19
	case p(3) >= 300 && p(3) <= 305, p(4) == 3095, p(2) == 36, p(2) == 38, p(2) == 39: // Diners Club
		return n >= 14 && n <= 19
	}
	return false
}

// luhn reports whether the digits d pass the Luhn (mod 10) check.
func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// --- US Social Security numbers

// ssnWords introduce a US SSN written as nine digits together.
var ssnWords = []string{"ssn", "social security", "社会安全号", "社會安全號", "社保号"}

// hasSSN reports whether text holds a US Social Security number: AAA-GG-SSSS
// or AAA GG SSSS (one separator throughout), or nine digits together after
// a word naming it ("SSN 123456789"), with an area other than 000, 666 and
// 900-999, a group other than 00 and a serial other than 0000.
func hasSSN(text string) bool {
	var lower string
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || !numberStart(text, i) {
			continue
		}
		ends, digits := digitGroups(text, i)
		end := ends[len(ends)-1]
		switch {
		case len(ends) == 3 && ends[0]-i == 3 && ends[1]-ends[0] == 3 && end-ends[1] == 5:
			// three groups of 3, 2 and 4 digits (separators counted)
		case len(ends) == 1 && len(digits) == 9:
			if lower == "" {
				lower = strings.ToLower(text)
			}
			if !namedBefore(lower, i, ssnWords) {
				i = end
				continue
			}
		default:
			i = end
			continue
		}
		if numberEnd(text, end) && validSSN(digits) {
			return true
		}
		i = end
	}
	return false
}

// namedBefore reports whether one of words ends at most 16 bytes before
// lower[i].
func namedBefore(lower string, i int, words []string) bool {
	before := lower[max(0, i-16-len("social security")):i]
	for _, w := range words {
		if k := strings.LastIndex(before, w); k >= 0 && len(before)-(k+len(w)) <= 16 {
			return true
		}
	}
	return false
}

func validSSN(d []byte) bool {
	area := string(d[:3])
	return area != "000" && area != "666" && d[0] != '9' &&
		string(d[3:5]) != "00" && string(d[5:]) != "0000"
}

// --- Chinese resident identity card numbers

// cnProvinces are the first two digits of a resident id: the province-level
// division (GB/T 2260), Taiwan, Hong Kong and Macau included.
var cnProvinces = map[string]bool{
	"11": true, "12": true, "13": true, "14": true, "15": true,
	"21": true, "22": true, "23": true,
	"31": true, "32": true, "33": true, "34": true, "35": true, "36": true, "37": true,
	"41": true, "42": true, "43": true, "44": true, "45": true, "46": true,
	"50": true, "51": true, "52": true, "53": true, "54": true,
	"61": true, "62": true, "63": true, "64": true, "65": true,
	"71": true, "81": true, "82": true, "83": true,
}

// hasChinaResidentID reports whether text holds an 18-character Chinese
// resident id (GB 11643): 17 digits and a check digit (0-9 or X), written
// together or as 6-8-4 groups, with a known province, a birth date between
// 1900 and thisYear, and the ISO 7064 MOD 11-2 check digit.
func hasChinaResidentID(text string, thisYear int) bool {
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || !numberStart(text, i) {
			continue
		}
		id, end, ok := residentIDAt(text, i)
		if ok && numberEnd(text, end) && validResidentID(id, thisYear) {
			return true
		}
		for i < len(text) && isDigit(text[i]) {
			i++
		}
	}
	return false
}

// residentIDAt reads 17 digits and a check character from text[i],
// together or grouped 6-8-4 by one space or dash.
func residentIDAt(text string, i int) (id []byte, end int, ok bool) {
	groups := []int{18}
	if j := i + 6; j < len(text) && (text[j] == ' ' || text[j] == '-') {
		groups = []int{6, 8, 4}
	}
	j := i
	for g, size := range groups {
		if g > 0 {
			if j >= len(text) || text[j] != text[i+6] {
				return nil, 0, false
			}
			j++
		}
		for k := 0; k < size; k++ {
			if j >= len(text) {
				return nil, 0, false
			}
			c := text[j]
			last := len(id) == 17
			if !isDigit(c) && !(last && (c == 'X' || c == 'x')) {
				return nil, 0, false
			}
			id = append(id, c)
			j++
		}
	}
	return id, j, true
}

var residentIDWeights = [17]int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}

func validResidentID(id []byte, thisYear int) bool {
	if !cnProvinces[string(id[:2])] {
		return false
	}
	year := atoi(id[6:10])
	if _, err := time.Parse("20060102", string(id[6:14])); err != nil || year < 1900 || year > thisYear {
		return false // not a date (20230230), or not a plausible birth year
	}
	sum := 0
	for k, w := range residentIDWeights {
		sum += int(id[k]-'0') * w
	}
	check := "10X98765432"[sum%11]
	c := id[17]
	if c == 'x' {
		c = 'X'
	}
	return c == check
}

func atoi(d []byte) int {
	v := 0
	for _, c := range d {
		v = v*10 + int(c-'0')
	}
	return v
}

// --- IBANs

// ibanLengths is the length of an IBAN per country (the SWIFT IBAN
// registry, release 99 of 2024).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
	"BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27,
	"DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27,
	"GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
	"IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32,
	"LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24,
	"PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
	"SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
	"TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// hasIBAN reports whether text holds an IBAN: a country code, two check
// digits and the account (capital letters and digits), written together
// or in groups of four separated by single spaces, of the country's length
// and passing the ISO 7064 mod-97 check.
func hasIBAN(text string) bool {
	for i := 0; i+4 <= len(text); i++ {
		c := text[i]
		if c < 'A' || c > 'Z' || !numberStart(text, i) {
			continue
		}
		size, ok := ibanLengths[text[i:i+2]]
		if !ok || !isDigit(text[i+2]) || !isDigit(text[i+3]) {
			continue
		}
		if iban, end, ok := ibanAt(text, i, size); ok && numberEnd(text, end) && validIBAN(iban) {
			return true
		}
	}
	return false
}

// ibanAt reads size capitals and digits from text[i], together or in
// groups of four separated by single spaces.
func ibanAt(text string, i, size int) (iban []byte, end int, ok bool) {
	spaced := i+4 < len(text) && text[i+4] == ' '
	j := i
	for len(iban) < size {
		if spaced && len(iban) > 0 && len(iban)%4 == 0 {
			if j >= len(text) || text[j] != ' ' {
				return nil, 0, false
			}
			j++
		}
		if j >= len(text) || !(isDigit(text[j]) || text[j] >= 'A' && text[j] <= 'Z') {
			return nil, 0, false
		}
		iban = append(iban, text[j])
		j++
	}
	return iban, j, true
}

// validIBAN checks an IBAN's check digits: moved to the end, letters as
// 10-35, the number is 1 mod 97 (ISO 13616).
func validIBAN(iban []byte) bool {
	if check := atoi(iban[2:4]); check < 2 || check > 98 {
		return false
	}
	rem := 0
	for _, c := range append(slices.Clone(iban[4:]), iban[:4]...) {
		if isDigit(c) {
			rem = (rem*10 + int(c-'0')) % 97
		} else {
			rem = (rem*100 + int(c-'A') + 10) % 97
		}
	}
	return rem == 1
}
