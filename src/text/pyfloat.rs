//! Python's `repr(float)` / `str(float)` in Rust.
//!
//! WebShop shows prices with f-strings (`f"${price}"`), so the shown text is Python's float repr:
//! the shortest digit string that round-trips, `1299.0` (never `1299`), and exponent form `1e-05` /
//! `1e+16` outside the decimal-point positions Python prints in fixed notation.

/// Formats `x` exactly as Python 3's `repr(x)` does.
///
/// Digits: Python (David Gay's dtoa, mode 0) prints the shortest digit string that reads back as
/// `x` and, among those, the one closest to `x`. Rust's `{:e}` gives a shortest string too but not
/// always the closest one (e.g. `170704547328348.63` where Python prints `...62`), so the length
/// is taken from `{:e}` and the digits from the correctly rounded `{:.N$e}` of that length when it
/// reads back as `x`. Layout: fixed notation when the scientific exponent `e` satisfies
/// `-4 <= e < 16`, else `d.ddde±XX` with at least two exponent digits.
pub fn repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let shortest = format!("{x:e}");
    let n_digits = shortest.split('e').next().unwrap_or("").chars().filter(char::is_ascii_digit).count();
    let closest = format!("{x:.prec$e}", prec = n_digits.saturating_sub(1));
    let sci = if closest.parse::<f64>() == Ok(x) { closest } else { shortest };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    // `{:e}` always prints a decimal exponent; a parse failure here would be a std bug, and 0 keeps
    // the output sane rather than panicking.
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();

    if (-4..16).contains(&exp) {
        let mut out = String::from(sign);
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
        out
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::repr;

    #[test]
    fn known_values() {
        let cases: &[(f64, &str)] = &[
            (1299.0, "1299.0"),
            (19.99, "19.99"),
            (100.0, "100.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.2345e20, "1.2345e+20"),
            (-3.25, "-3.25"),
            (1e300, "1e+300"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
            (0.1 + 0.2, "0.30000000000000004"),
        ];
        for (x, want) in cases {
            assert_eq!(repr(*x), *want, "repr({x:?})");
        }
    }
}
