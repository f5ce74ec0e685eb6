-- A wallet's budget of verified sign-ins (public.sign_in_with_nonce) is named by what signed in: a
-- contract wallet on its chain, a key ('eoa') on every chain. The same contract address's wallet on
-- another chain, with other owners, spends its own budget, never this one's.
begin;
create extension if not exists pgtap with schema extensions;
select plan(4);

insert into public.auth_nonces (nonce, expires_at)
  select 'testbudgetnonce' || lpad(i::text, 4, '0'), now() + interval '10 minutes'
    from generate_series(1, 6) as i;

-- Limit 2: two sign-ins of the wallet on chain 8453, the third refused.
select results_eq(
  $$ select outcome from public.sign_in_with_nonce('testbudgetnonce0001', '0x' || repeat('c', 40),
       sha256('1'::bytea), 3600, 'proof:address:', 2, 60, 8453, 8453)
     union all select outcome from public.sign_in_with_nonce('testbudgetnonce0002',
       '0x' || repeat('c', 40), sha256('2'::bytea), 3600, 'proof:address:', 2, 60, 8453, 8453)
     union all select outcome from public.sign_in_with_nonce('testbudgetnonce0003',
       '0x' || repeat('c', 40), sha256('3'::bytea), 3600, 'proof:address:', 2, 60, 8453, 8453) $$,
  array['signed_in', 'signed_in', 'rate_limited'],
  'a contract wallet is held to its budget on its chain'
);
select results_eq(
  $$ select outcome from public.sign_in_with_nonce('testbudgetnonce0004', '0x' || repeat('c', 40),
       sha256('4'::bytea), 3600, 'proof:address:', 2, 60, 1, 1) $$,
  array['signed_in'],
  'the same address''s wallet on another chain signs in: its budget is that chain''s'
);
select results_eq(
  $$ select outcome from public.sign_in_with_nonce('testbudgetnonce0005', '0x' || repeat('c', 40),
       sha256('5'::bytea), 3600, 'proof:address:', 2, 60, 1, null) $$,
  array['signed_in'],
  'a key at that address counts apart from its contract wallets'
);
select results_eq(
  $$ select bucket from public.rate_limit_windows where bucket like 'proof:address:%'
       and bucket like '%' || repeat('c', 40) order by bucket $$,
  array['proof:address:1:0x' || repeat('c', 40), 'proof:address:8453:0x' || repeat('c', 40),
    'proof:address:eoa:0x' || repeat('c', 40)],
  'each budget is named by its chain, or eoa for a key'
);

select * from finish();
rollback;
