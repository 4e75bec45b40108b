//! Standard Webhooks signatures: signing deliveries and verifying them.
