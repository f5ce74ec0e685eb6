-- The live-session check keeps its plan whichever role the service connects as.
--
-- public.session_is_live_for is called in one GET twice: by public.list_user_secrets, as the
-- service's own login role, and by the row-level security policy's public.session_is_live(), a
-- security definer function, as that function's owner. Its query reads auth_sessions, a table
-- under row-level security, so PL/pgSQL's cached plan belongs to the role it was made as; when the
-- service connects as a role other than the functions' owner (a least-privilege login role, say),
-- each call found the plan made for the other role and parsed and planned the query again: twice
-- a GET. pgbench, server time of one list call as a BYPASSRLS member of service_role that owns
-- nothing: ~204 us, against ~124 us as the owner; planning was a third of it (perf). As a
-- security definer function it always runs as its owner, so one plan serves both callers: ~124 us
-- for either role.
--
-- Nothing else changes: only service_role (and its owner) may execute it (migration
-- 20261124000000), its search_path is pinned, and the callers already reached auth_sessions
-- through it as the owner (the policy's path) or as a role that bypasses row-level security (the
-- service's), as Supabase's `postgres` does.
alter function public.session_is_live_for(uuid, uuid) security definer;

-- The same for the rate-limit counter: the service calls public.hit_rate_limit directly (sign-in,
-- refresh, the nonce) and the vault's security definer functions call it as the owner (PUT,
-- DELETE, reveal), so a pooled connection serving both kinds planned its upsert again at each
-- switch. It already ran as the owner from those functions, with the same pinned search_path;
-- only service_role may execute it.
alter function public.hit_rate_limit(text, integer) security definer;
