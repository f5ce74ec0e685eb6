-- A refresh may be tried again when its answer was lost (a timeout, a dropped connection). The
-- client sends a random retry key with every try of one refresh; the spent token's row keeps the
-- key's hash, so a second try can be told from a copy of the token (which lacks the key) and be
-- answered with the same successor. Without a key, a spent token sent again is always theft.
alter table public.auth_refresh_tokens add column retry_key_hash bytea;
