//! What an image or other binary content item costs, by the provider's published rules:
//! OpenAI bills a high-detail image as 85 tokens plus 170 per 512-pixel tile after scaling it
//! to fit 2048×2048 and then its shorter side to 768; Anthropic bills about width × height /
//! 750, at most [`UNKNOWN_MEDIA_TOKENS`] once it scales a large image down. The size is read
//! from the first bytes of a PNG or GIF; any other image, audio or binary resource counts as
//! [`UNKNOWN_MEDIA_TOKENS`]. It reads at most a few dozen bytes of the data, whatever its size.

use base64::Engine as _;

use crate::tokens::Provider;

/// What an item costs when its size cannot be read: the most either provider bills for one
/// image once it has scaled it down.
pub const UNKNOWN_MEDIA_TOKENS: u64 = 1_600;

/// Tokens of a base64 `data` item of `mime` type for `provider`.
pub(super) fn tokens(data: &str, mime: &str, provider: Provider) -> u64 {
    match (mime.starts_with("image/"), size(data)) {
        (true, Some((w, h))) => billed(w, h, provider),
        _ => UNKNOWN_MEDIA_TOKENS,
    }
}

fn billed(w: u64, h: u64, provider: Provider) -> u64 {
    if w == 0 || h == 0 {
        return UNKNOWN_MEDIA_TOKENS;
    }
    match provider {
        Provider::Openai => {
            let (mut w, mut h) = (w as f64, h as f64);
            let fit = (2048.0 / w.max(h)).min(1.0);
            (w, h) = (w * fit, h * fit);
            let short = (768.0 / w.min(h)).min(1.0);
            (w, h) = (w * short, h * short);
            let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
            85 + 170 * tiles as u64
        }
        Provider::Anthropic => (w.saturating_mul(h) / 750).clamp(1, UNKNOWN_MEDIA_TOKENS),
    }
}

/// Width and height from a PNG's or GIF's header, reading the first 32 base64 characters.
fn size(data: &str) -> Option<(u64, u64)> {
    let head = data.get(..32)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(head)
        .ok()?;
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.get(12..16)? == b"IHDR" {
        let be = |at: usize| -> Option<u64> {
            Some(u64::from(u32::from_be_bytes(
                bytes.get(at..at + 4)?.try_into().ok()?,
            )))
        };
        return Some((be(16)?, be(20)?));
    }
    if bytes.starts_with(b"GIF8") {
        let le = |at: usize| -> Option<u64> {
            Some(u64::from(u16::from_le_bytes(
                bytes.get(at..at + 2)?.try_into().ok()?,
            )))
        };
        return Some((le(6)?, le(8)?));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_png_is_billed_by_its_size() {
        // The 1×1 PNG of server-everything's `get-tiny-image`'s kind.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        assert_eq!(size(png), Some((1, 1)));
        assert_eq!(tokens(png, "image/png", Provider::Openai), 85 + 170);
        assert_eq!(tokens(png, "image/png", Provider::Anthropic), 1);
        // OpenAI's own example: 1024×1024 is 765 tokens; 2048×4096 is 1,105.
        assert_eq!(billed(1024, 1024, Provider::Openai), 765);
        assert_eq!(billed(2048, 4096, Provider::Openai), 1105);
        assert_eq!(
            tokens("not base64", "image/png", Provider::Openai),
            UNKNOWN_MEDIA_TOKENS
        );
        assert_eq!(
            tokens(png, "audio/wav", Provider::Openai),
            UNKNOWN_MEDIA_TOKENS
        );
    }
}
