import {
  type MaskedSecret,
  SECRET_TYPES,
  type SecretType,
  VaultError,
} from "@wallet-vault/client";
import { type FormEvent, useEffect, useState } from "react";
import { listKeys, saveKey } from "./keys";

/** The signed-in creator's keys, masked, and a form that saves one. */
export function KeyForm() {
  const [keys, setKeys] = useState<readonly MaskedSecret[] | null>(null);
  const [secretType, setSecretType] = useState<SecretType>(SECRET_TYPES[0]);
  const [value, setValue] = useState("");
  const [problem, setProblem] = useState<string | null>(null);

  const show = (error: unknown) =>
    setProblem(error instanceof VaultError ? error.code : String(error));
  useEffect(() => {
    listKeys().then(setKeys, show);
  }, []);

  async function onSubmit(event: FormEvent) {
    event.preventDefault();
    setProblem(null);
    try {
      await saveKey(secretType, value);
      setValue("");
      setKeys(await listKeys());
    } catch (error) {
      show(error);
    }
  }

  return (
    <section>
      <form onSubmit={onSubmit}>
        <select
          aria-label="Key type"
          value={secretType}
          onChange={(event) => setSecretType(event.target.value as SecretType)}
        >
          {SECRET_TYPES.map((type) => <option key={type}>{type}</option>)}
        </select>
        <input
          aria-label="Key value"
          type="password"
          autoComplete="off"
          value={value}
          onChange={(event) => setValue(event.target.value)}
        />
        <button type="submit">Save key</button>
      </form>
      {problem !== null && <p role="alert" data-code={problem}>{problem}</p>}
      <ul aria-label="Saved keys" data-loaded={keys !== null}>
        {keys?.map((key) => (
          <li key={key.secretType} data-secret-type={key.secretType}>
            {key.secretType} {key.hint ?? ""} {key.updatedAt}
          </li>
        ))}
      </ul>
    </section>
  );
}
