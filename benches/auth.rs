//! Bearer token checking (src/auth.rs) with the issuer's keys held (a JWKS
//! file, read once): what every `/mcp` and `/v1/*` request under `[auth]`
//! pays before it is answered.
//!
//! - `auth/es256`: an ES256 access token as oidc-provider issues them
//!   (`kid`, `scope`, `client_id`, `iss`, `aud`, `exp`), checked and
//!   matched to its grant.
//! - `auth/refused_expired`: the same token past its `exp` (signature
//!   verified, then refused).
//! - `auth/api_key`: a static API key (`[[auth.key]]`), the last of 100
//!   held: hashed once, compared with every digest in constant time.

use criterion::{Criterion, criterion_group, criterion_main};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use muster::auth::Authenticator;
use muster::policy::{
    ApiKey, AuthPolicy, Grant, GrantMatch, Issuer, JwksSource, MetricsAccess, Origin,
};
use std::hint::black_box;

const PEM: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/0pse/9IZAvxNcfx
6pQeQnCPoparO+ruSjDEehvWyH+hRANCAARnJyVRpeng1cwUZwQQrHsxwKk6uCt6
brb2z05fRfyCFN7yZNf2kWtPN0+P1GdBzRI/TSJQ56MRXNtAO8eu1wMC
-----END PRIVATE KEY-----
";

fn token(key: &EncodingKey, exp: u64) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k1".into());
    let claims = serde_json::json!({
        "jti": "x", "sub": "writer", "client_id": "writer", "scope": "memory:read memory:write",
        "iss": "https://idp.example", "aud": "https://muster.example/mcp", "iat": exp - 600, "exp": exp,
    });
    format!(
        "Bearer {}",
        jsonwebtoken::encode(&header, &claims, key).unwrap()
    )
}

fn bench(c: &mut Criterion) {
    let key = EncodingKey::from_ec_pem(PEM.as_bytes()).unwrap();
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some("k1".into());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(
        &file,
        serde_json::to_string(&JwkSet { keys: vec![jwk] }).unwrap(),
    )
    .unwrap();
    let grant = |scope: &str, agent: &str| Grant {
        matches: GrantMatch::Scope(scope.into()),
        agents: vec![agent.into()],
        origin: Origin {
            file: "muster.toml".into(),
            line: None,
        },
    };
    let origin = Origin {
        file: "muster.toml".into(),
        line: None,
    };
    let mut last_key = String::new();
    let keys = (0..100)
        .map(|i| {
            let (key, hash) = muster::auth::new_key().unwrap();
            last_key = format!("Bearer {key}");
            let hex = hash.strip_prefix("sha256:").unwrap();
            let mut digest = [0u8; 32];
            for (j, byte) in digest.iter_mut().enumerate() {
                *byte = u8::from_str_radix(&hex[2 * j..2 * j + 2], 16).unwrap();
            }
            ApiKey {
                name: format!("k{i}"),
                agents: vec!["reader".into()],
                digest,
                origin: origin.clone(),
            }
        })
        .collect();
    let policy = AuthPolicy {
        issuer: Some(Issuer {
            issuer: "https://idp.example".into(),
            audience: "https://muster.example/mcp".into(),
            jwks: JwksSource::File(file),
            authorization_servers: vec!["https://idp.example".into()],
            leeway_secs: 30,
            jwks_refetch_secs: 30,
        }),
        keys,
        metrics: MetricsAccess::Open,
        grants: vec![
            grant("memory:write", "writer"),
            grant("memory:read", "reader"),
        ],
        limits: None,
        origin,
    };
    let auth = Authenticator::new(&policy).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let valid = token(&key, now + 3600);
    let expired = token(&key, now - 3600);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    assert!(
        runtime
            .block_on(auth.authenticate(Some(valid.as_bytes())))
            .is_ok()
    );
    assert!(
        runtime
            .block_on(auth.authenticate(Some(expired.as_bytes())))
            .is_err()
    );
    assert!(
        runtime
            .block_on(auth.authenticate(Some(last_key.as_bytes())))
            .is_ok()
    );
    let mut group = c.benchmark_group("auth");
    group.bench_function("es256", |b| {
        b.iter(|| runtime.block_on(auth.authenticate(black_box(Some(valid.as_bytes())))))
    });
    group.bench_function("refused_expired", |b| {
        b.iter(|| runtime.block_on(auth.authenticate(black_box(Some(expired.as_bytes())))))
    });
    group.bench_function("api_key", |b| {
        b.iter(|| runtime.block_on(auth.authenticate(black_box(Some(last_key.as_bytes())))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
