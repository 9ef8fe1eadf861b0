//! The epoch/token protocol: fencing tokens from an unlogged counter, made crash safe by
//! durable epochs (see the module docs of `postgres` for why it is correct).

use super::super::Error;
use super::sql;
use tokio_postgres::Client;

/// A token's epoch is its value shifted right by this.
pub(super) const EPOCH_SHIFT: u32 = 32;

/// Whether `drawn` may be handed out as it is, given an epoch known to be durable.
pub(super) fn covers(durable_epoch: i64, drawn: i64) -> bool {
    (1..=durable_epoch).contains(&(drawn >> EPOCH_SHIFT))
}

/// Makes the epoch of `drawn`, a value just drawn while holding a lock, durable, and returns
/// the token to hand out (`drawn`, or after a crash reset a fresh value) with the epoch now
/// known to be durable.
///
/// Any error leaves the transaction open: the caller then drops the connection.
pub(super) async fn record(client: &Client, drawn: i64) -> Result<(i64, i64), Error> {
    client.batch_execute(sql::BEGIN_EPOCH).await?;
    let durable: i64 = client.query_one(sql::DURABLE_EPOCH, &[]).await?.get(0);
    let mut token = drawn;
    if token >> EPOCH_SHIFT == 0 {
        // Reset by crash recovery (or new), unless another client repositioned it since.
        token = client.query_one(sql::DRAW, &[]).await?.get(0);
        if token >> EPOCH_SHIFT == 0 {
            token = durable
                .checked_add(1)
                .and_then(|epoch| epoch.checked_shl(EPOCH_SHIFT))
                .filter(|&first| first >> EPOCH_SHIFT == durable + 1)
                .ok_or(Error::TokensExhausted)?;
            client.execute(sql::MOVE_COUNTER, &[&token]).await?;
        }
    }
    let epoch = token >> EPOCH_SHIFT;
    if epoch > durable {
        client.execute(sql::RECORD_EPOCH, &[&epoch]).await?;
    }
    // Synchronous: flushed to disk before the token is handed out.
    client.batch_execute("COMMIT").await?;
    Ok((token, durable.max(epoch)))
}
