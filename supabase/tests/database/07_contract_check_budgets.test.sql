-- Before a contract wallet's signature costs an RPC call (public.admit_contract_check): a nonce is
-- put to the chain at most nonce_check_limit times; each client IP has a budget per wallet and
-- chain, under a cap for the wallet every client shares; one client's refusals spend nothing of
-- the shared cap, and the same address on another chain counts apart.
begin;
create extension if not exists pgtap with schema extensions;
select plan(11);

insert into public.auth_nonces (nonce, expires_at) values
  ('testchecknonce0001', now() + interval '10 minutes'),
  ('testchecknonce0002', now() + interval '10 minutes'),
  ('testchecknonce0003', now() + interval '10 minutes'),
  ('testchecknonce0004', now() + interval '10 minutes');

-- One client, one nonce, generous budgets: three checks, then the nonce is refused.
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0001', '0x' || repeat('a', 40),
       1, '10.0.0.1', 'rpc:ip:', 100, 'rpc:address:', 100, 60, 'rpc:address-ip:', 100, 3)
     union all select outcome from public.admit_contract_check('testchecknonce0001',
       '0x' || repeat('a', 40), 1, '10.0.0.1', 'rpc:ip:', 100, 'rpc:address:', 100, 60,
       'rpc:address-ip:', 100, 3)
     union all select outcome from public.admit_contract_check('testchecknonce0001',
       '0x' || repeat('a', 40), 1, '10.0.0.1', 'rpc:ip:', 100, 'rpc:address:', 100, 60,
       'rpc:address-ip:', 100, 3)
     union all select outcome from public.admit_contract_check('testchecknonce0001',
       '0x' || repeat('a', 40), 1, '10.0.0.1', 'rpc:ip:', 100, 'rpc:address:', 100, 60,
       'rpc:address-ip:', 100, 3) $$,
  array['ok', 'ok', 'ok', 'nonce_exhausted'],
  'a nonce is admitted for at most nonce_check_limit checks'
);
select is(
  (select contract_checks from public.auth_nonces where nonce = 'testchecknonce0001'),
  3,
  'the refused fourth check is not counted'
);
select is(
  (select used_at is null from public.auth_nonces where nonce = 'testchecknonce0001'),
  true,
  'checks spend no nonce'
);

-- Per wallet and client: 2. Shared by every client: 3.
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0002', '0x' || repeat('b', 40),
       1, '10.0.0.2', 'rpc:ip:', 100, 'rpc:address:', 3, 60, 'rpc:address-ip:', 2, 100)
     union all select outcome from public.admit_contract_check('testchecknonce0002',
       '0x' || repeat('b', 40), 1, '10.0.0.2', 'rpc:ip:', 100, 'rpc:address:', 3, 60,
       'rpc:address-ip:', 2, 100)
     union all select outcome from public.admit_contract_check('testchecknonce0002',
       '0x' || repeat('b', 40), 1, '10.0.0.2', 'rpc:ip:', 100, 'rpc:address:', 3, 60,
       'rpc:address-ip:', 2, 100) $$,
  array['ok', 'ok', 'rate_limited'],
  'one client is held to its budget for a wallet'
);
select is(
  (select hits from public.rate_limit_windows
    where bucket = 'rpc:address:1:0x' || repeat('b', 40)),
  2,
  'the client''s refused check spent nothing of the wallet''s shared cap'
);
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0003', '0x' || repeat('b', 40),
       1, '10.0.0.3', 'rpc:ip:', 100, 'rpc:address:', 3, 60, 'rpc:address-ip:', 2, 100)
     union all select outcome from public.admit_contract_check('testchecknonce0003',
       '0x' || repeat('b', 40), 1, '10.0.0.3', 'rpc:ip:', 100, 'rpc:address:', 3, 60,
       'rpc:address-ip:', 2, 100) $$,
  array['ok', 'rate_limited'],
  'another client has its own budget, under the cap every client shares'
);
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0003', '0x' || repeat('b', 40),
       8453, '10.0.0.3', 'rpc:ip:', 100, 'rpc:address:', 3, 60, 'rpc:address-ip:', 2, 100) $$,
  array['ok'],
  'the same address on another chain counts apart'
);
select is(
  (select retry_after > 0 from public.admit_contract_check('testchecknonce0003',
     '0x' || repeat('b', 40), 1, '10.0.0.4', 'rpc:ip:', 100, 'rpc:address:', 3, 60,
     'rpc:address-ip:', 2, 100)),
  true,
  'a refusal over a budget says when to retry'
);

-- The client's budget over all wallets still comes first.
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0004', '0x' || repeat('c', 40),
       1, '10.0.0.5', 'rpc:ip:', 1, 'rpc:address:', 100, 60, 'rpc:address-ip:', 100, 100)
     union all select outcome from public.admit_contract_check('testchecknonce0004',
       '0x' || repeat('d', 40), 1, '10.0.0.5', 'rpc:ip:', 1, 'rpc:address:', 100, 60,
       'rpc:address-ip:', 100, 100) $$,
  array['ok', 'rate_limited'],
  'a client over its own budget is refused whichever wallet it names'
);
select is_empty(
  $$ select 1 from public.rate_limit_windows where bucket like 'rpc:address%' || repeat('d', 40) || '%' $$,
  'and spends nothing of that wallet''s budgets'
);

-- A spent nonce is refused as before, before any budget.
update public.auth_nonces set used_at = now() where nonce = 'testchecknonce0004';
select results_eq(
  $$ select outcome from public.admit_contract_check('testchecknonce0004', '0x' || repeat('c', 40),
       1, '10.0.0.6', 'rpc:ip:', 100, 'rpc:address:', 100, 60, 'rpc:address-ip:', 100, 100) $$,
  array['nonce_used'],
  'a spent nonce is nonce_used'
);

select * from finish();
rollback;
