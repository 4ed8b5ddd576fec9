//! The Porter (1980) stemmer, so "emails", "listing" and "scheduled" meet
//! "email", "list" and "schedule" in the index. It decides only the stem of one
//! lowercase word; it must not split, lowercase or drop words (`text` does).
//!
//! A direct port of Martin Porter's reference C implementation, including its
//! published departures (`bli` → `ble`, `logi` → `log`). Words that are not
//! all ASCII lowercase letters, or shorter than three letters, are returned
//! unchanged.

/// The Porter stem of `word`.
pub fn stem(word: &str) -> String {
    if word.len() <= 2 || !word.bytes().all(|c| c.is_ascii_lowercase()) {
        return word.to_owned();
    }
    let mut s = Stemmer {
        b: word.as_bytes().to_vec(),
        k: word.len() as isize - 1,
        j: 0,
    };
    s.step1ab();
    if s.k > 0 {
        s.step1c();
        s.step2();
        s.step3();
        s.step4();
        s.step5();
    }
    s.b.truncate(s.k as usize + 1);
    String::from_utf8(s.b).expect("ASCII in, ASCII out")
}

/// The word being stemmed is `b[0..=k]`; `j` marks the end of the stem a
/// matched suffix leaves (-1 when the suffix is the whole word).
struct Stemmer {
    b: Vec<u8>,
    k: isize,
    j: isize,
}

impl Stemmer {
    fn at(&self, i: isize) -> u8 {
        self.b[i as usize]
    }

    /// Whether `b[i]` is a consonant: not a vowel, and `y` only after a vowel.
    fn cons(&self, i: isize) -> bool {
        match self.at(i) {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The measure m of `b[0..=j]`: the n in `[C](VC)^n[V]`.
    fn m(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        loop {
            if i > self.j {
                return n;
            }
            if !self.cons(i) {
                break;
            }
            i += 1;
        }
        i += 1;
        loop {
            loop {
                if i > self.j {
                    return n;
                }
                if self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
            n += 1;
            loop {
                if i > self.j {
                    return n;
                }
                if !self.cons(i) {
                    break;
                }
                i += 1;
            }
            i += 1;
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.cons(i))
    }

    fn double_cons(&self, i: isize) -> bool {
        i >= 1 && self.at(i) == self.at(i - 1) && self.cons(i)
    }

    /// consonant-vowel-consonant ending at `i`, the last not w, x or y.
    fn cvc(&self, i: isize) -> bool {
        i >= 2
            && self.cons(i)
            && !self.cons(i - 1)
            && self.cons(i - 2)
            && !matches!(self.at(i), b'w' | b'x' | b'y')
    }

    /// Whether `b[0..=k]` ends with `s`; sets `j` to just before it.
    fn ends(&mut self, s: &str) -> bool {
        let len = s.len() as isize;
        if len > self.k + 1 {
            return false;
        }
        let from = (self.k + 1 - len) as usize;
        if &self.b[from..=self.k as usize] != s.as_bytes() {
            return false;
        }
        self.j = self.k - len;
        true
    }

    /// Replace `b[j+1..=k]` with `s`.
    fn set_to(&mut self, s: &str) {
        let at = (self.j + 1) as usize;
        self.b.truncate(at);
        self.b.extend_from_slice(s.as_bytes());
        self.k = self.j + s.len() as isize;
    }

    fn replace_if_measured(&mut self, s: &str) {
        if self.m() > 0 {
            self.set_to(s);
        }
    }

    /// Plurals and -ed / -ing.
    fn step1ab(&mut self) {
        if self.at(self.k) == b's' {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.at(self.k - 1) != b's' {
                self.k -= 1;
            }
        }
        if self.ends("eed") {
            if self.m() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.k = self.j;
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_cons(self.k) {
                self.k -= 1;
                if matches!(self.at(self.k), b'l' | b's' | b'z') {
                    self.k += 1;
                }
            } else {
                self.j = self.k;
                if self.m() == 1 && self.cvc(self.k) {
                    self.set_to("e");
                }
            }
        }
    }

    /// Terminal y → i when there is another vowel in the stem.
    fn step1c(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            let k = self.k as usize;
            self.b[k] = b'i';
        }
    }

    /// Apply the first rule whose suffix matches (each replaced only when m > 0).
    fn rules(&mut self, rules: &[(&str, &str)]) {
        for (suffix, with) in rules {
            if self.ends(suffix) {
                self.replace_if_measured(with);
                return;
            }
        }
    }

    /// Double suffixes to single ones (-ization → -ize, ...).
    fn step2(&mut self) {
        let rules: &[(&str, &str)] = match self.at(self.k - 1) {
            b'a' => &[("ational", "ate"), ("tional", "tion")],
            b'c' => &[("enci", "ence"), ("anci", "ance")],
            b'e' => &[("izer", "ize")],
            b'l' => &[
                ("bli", "ble"),
                ("alli", "al"),
                ("entli", "ent"),
                ("eli", "e"),
                ("ousli", "ous"),
            ],
            b'o' => &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            b's' => &[
                ("alism", "al"),
                ("iveness", "ive"),
                ("fulness", "ful"),
                ("ousness", "ous"),
            ],
            b't' => &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            b'g' => &[("logi", "log")],
            _ => &[],
        };
        self.rules(rules);
    }

    /// -ic-, -full, -ness, ...
    fn step3(&mut self) {
        let rules: &[(&str, &str)] = match self.at(self.k) {
            b'e' => &[("icate", "ic"), ("ative", ""), ("alize", "al")],
            b'i' => &[("iciti", "ic")],
            b'l' => &[("ical", "ic"), ("ful", "")],
            b's' => &[("ness", "")],
            _ => &[],
        };
        self.rules(rules);
    }

    /// -ant, -ence, ... removed when m > 1.
    fn step4(&mut self) {
        let suffixes: &[&str] = match self.at(self.k - 1) {
            b'a' => &["al"],
            b'c' => &["ance", "ence"],
            b'e' => &["er"],
            b'i' => &["ic"],
            b'l' => &["able", "ible"],
            b'n' => &["ant", "ement", "ment", "ent"],
            b'o' => {
                let ion = self.ends("ion") && self.j >= 0 && matches!(self.at(self.j), b's' | b't');
                if !ion && !self.ends("ou") {
                    return;
                }
                &[]
            }
            b's' => &["ism"],
            b't' => &["ate", "iti"],
            b'u' => &["ous"],
            b'v' => &["ive"],
            b'z' => &["ize"],
            _ => return,
        };
        if !suffixes.is_empty() && !suffixes.iter().any(|s| self.ends(s)) {
            return;
        }
        if self.m() > 1 {
            self.k = self.j;
        }
    }

    /// A final -e and a double l.
    fn step5(&mut self) {
        self.j = self.k;
        if self.at(self.k) == b'e' {
            let a = self.m();
            if a > 1 || (a == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        if self.at(self.k) == b'l' && self.double_cons(self.k) && self.m() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stem;

    #[test]
    fn porters_published_examples() {
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("digitizer", "digit"),
            ("generalization", "gener"),
            ("hopefulness", "hope"),
            ("electrical", "electr"),
            ("adjustable", "adjust"),
            ("controlling", "control"),
            ("generate", "gener"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("roll", "roll"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "{word}");
        }
    }

    #[test]
    fn the_forms_users_type_meet_the_forms_tools_use() {
        assert_eq!(stem("emails"), "email");
        assert_eq!(stem("listing"), "list");
        assert_eq!(stem("lists"), "list");
        assert_eq!(stem("scheduled"), "schedul");
        assert_eq!(stem("schedule"), "schedul");
        assert_eq!(stem("directories"), stem("directory"));
        assert_eq!(stem("observations"), stem("observation"));
        assert_eq!(stem("threads"), "thread");
    }

    #[test]
    fn short_and_non_letter_words_are_kept() {
        for word in ["id", "a", "base64", "über", "42", ""] {
            assert_eq!(stem(word), word);
        }
    }
}
