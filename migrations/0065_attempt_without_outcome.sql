-- Every attempt ends (issue 11, ADR-014): an attempt whose worker died, or whose outcome could not be
-- written, stays open until its event has spent its delivery cycle. The relay then fails the event
-- and closes such attempts with SIN_RESULTADO, so the detail page says what happened to each one.
ALTER TABLE delivery_attempt DROP CONSTRAINT IF EXISTS delivery_attempt_outcome_check;
ALTER TABLE delivery_attempt ADD CONSTRAINT delivery_attempt_outcome_check
    CHECK (outcome IN ('ENTREGADO', 'REINTENTO', 'FALLIDO', 'DESCARTADO_POR_LEASE', 'SIN_RESULTADO'));
